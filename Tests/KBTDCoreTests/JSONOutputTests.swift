import Foundation
@testable import KBTDCore
import Testing

/// `JSONOutput`'s strings: a string with nothing to escape is appended whole, any other scalar by
/// scalar; both give the bytes the scalar-by-scalar escaping gives, and JSON reads them back as
/// the same string.
@Suite("JSONOutput: strings escaped")
struct JSONOutputTests {
    /// The escaping scalar by scalar (`JSONOutput.writeEachScalar`), whatever the string holds.
    static func reference(_ string: String) -> String {
        var out = ""
        JSONOutput.writeEachScalar(string, to: &out)
        return out
    }

    @Test func knownStringsGiveKnownBytes() {
        #expect(JSONOutput.string("iPhone17,1").serialized() == #""iPhone17,1""#)
        #expect(JSONOutput.string("").serialized() == #""""#)
        #expect(JSONOutput.string("日本語 é 🙂").serialized() == "\"日本語 é 🙂\"")
        #expect(JSONOutput.string("a\"b\\c\nd\re\tf\u{01}g\u{1F}").serialized() == #""a\"b\\c\nd\re\tf\u0001g\u001f""#)
        // An escape beside non-ASCII scalars: the slow path keeps them as they are.
        #expect(JSONOutput.string("ja-JP \"日本\"\u{7F}").serialized() == "\"ja-JP \\\"日本\\\"\u{7F}\"")
        #expect(JSONOutput.object([("k\"ey", .string("v"))]).serialized() == #"{"k\"ey":"v"}"#)
    }

    /// Random strings over scalars that need an escape, ASCII, and multi-byte scalars: the same
    /// bytes as the reference, and JSON reads the same string back. (Not U+FEFF: Foundation's
    /// `JSONSerialization` drops it from the strings it reads.)
    @Test func randomStringsMatchTheReferenceAndReadBack() throws {
        let pool: [Unicode.Scalar] = ["\"", "\\", "\n", "\r", "\t", "\u{00}", "\u{08}", "\u{1B}", "\u{1F}", " ", "a", "Z", "-",
                                      ",", "/", "\u{7F}", "é", "日", "\u{2028}", "🙂", "\u{10FFFF}"]
        var random = SplitMix64(seed: 39)
        var escaped = 0
        for round in 0..<2_000 {
            var string = ""
            let length = Int(random.next() % 24)
            // Every fourth string from the scalars that need no escape alone (the whole-string path).
            let choices = round % 4 == 0 ? Array(pool.dropFirst(9)) : pool
            for _ in 0..<length { string.unicodeScalars.append(choices[Int(random.next() % UInt64(choices.count))]) }
            let bytes = JSONOutput.string(string).serialized()
            #expect(bytes == Self.reference(string), "\(Array(string.unicodeScalars))")
            let read = try JSONSerialization.jsonObject(with: Data("[\(bytes)]".utf8)) as? [String]
            #expect(read == [string], "\(Array(string.unicodeScalars))")
            if bytes.utf8.count != string.utf8.count + 2 { escaped += 1 }
        }
        // Both paths ran: strings with escapes and strings without.
        #expect(escaped > 500 && escaped < 1_900, "\(escaped) of 2,000 strings needed an escape")
    }
}
