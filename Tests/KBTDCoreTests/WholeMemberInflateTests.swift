import Foundation
import KBTDCompression
import KBTDReference
import Testing

/// `BodyInflater`: libdeflate in one call for a whole gzip member, zlib for
/// everything else, with zlib's results and errors either way (`InflateOracle`).
@Suite("Whole-member inflate")
struct WholeMemberInflateTests {
    let payload = Array(String(repeating: "{\"keyboard\":336,\"language\":\"ja-JP\"}", count: 600).utf8)

    func inflate(_ bytes: [UInt8], _ coding: ContentCoding = .gzip, max: Int = 8 << 20, chunk: Int = 1 << 20,
                 holdLimit: Int = BodyInflater.defaultHoldLimit) throws -> (output: [UInt8], whole: Bool) {
        let inflater = BodyInflater(coding: coding, maxOutput: max, holdLimit: holdLimit)
        var offset = 0
        while offset < bytes.count {
            try inflater.feed(bytes[offset..<min(bytes.count, offset + chunk)])
            offset += chunk
        }
        return (try inflater.finish(), inflater.inflatedWhole)
    }

    /// The seeds the fuzz harness starts from (Fuzz/make-seeds.py), by name, without the two harness bytes.
    func seed(_ name: String) throws -> [UInt8] {
        let url = TestPaths.repositoryRoot.appendingPathComponent("Fuzz/seeds/\(name)")
        return Array([UInt8](try Data(contentsOf: url)).dropFirst(2))
    }

    @Test(arguments: [1, 7, 1 << 20])
    func aWholeMemberInflatesInOneCall(chunk: Int) throws {
        let gzip = Deflater.compress(payload, format: .gzip)
        let (output, whole) = try inflate(gzip, chunk: chunk)
        #expect(output == payload)
        #expect(whole)
        #expect(WholeMemberInflater.inflate(gzip, maxOutput: payload.count) == payload)
    }

    @Test func storedAndNamedMembersTakeTheOneCallPath() throws {
        for name in ["stored.gz", "named.gz", "whole.gz"] {
            let (output, whole) = try inflate(try seed(name))
            #expect(whole, "\(name)")
            #expect(output.count == 1075, "\(name)")
        }
    }

    /// The cases zlib must decide: the result is zlib's, and the one-call path declined.
    @Test(arguments: ["fhcrc.gz", "two-members.gz"])
    func zlibDecidesAndAccepts(name: String) throws {
        let body = try seed(name)
        let (output, whole) = try inflate(body)
        #expect(!whole)
        #expect(output == (try zlibInflate(body)))
        #expect(WholeMemberInflater.inflate(body, maxOutput: 8 << 20) == nil)
    }

    @Test(arguments: ["isize-small.gz", "isize-large.gz", "isize-huge.gz", "isize-zero.gz", "fhcrc-wrong.gz",
                      "trailing-garbage.gz", "trailing-magic.gz", "trailing-zero.gz", "truncated-trailer.gz",
                      "overrun.gz", "fixed-286.gz"])
    func zlibDecidesAndRefuses(name: String) throws {
        let body = try seed(name)
        let expected = #expect(throws: InflateError.self) { try zlibInflate(body) }
        let got = #expect(throws: InflateError.self) { try inflate(body) }
        #expect(got == expected)
        #expect(WholeMemberInflater.inflate(body, maxOutput: 8 << 20) == nil)
    }

    /// libdeflate reads these two as the trailer's CRC says (checked with a C program against
    /// libdeflate 1.14 when they were written); zlib refuses them, and so must the one-call path.
    @Test func streamsLibdeflateIsLooserOnStayWithZlib() throws {
        for name in ["overrun.gz", "fixed-286.gz"] {
            let body = try seed(name)
            #expect(WholeMemberInflater.inflate(body, maxOutput: 8 << 20) == nil, "\(name)")
            #expect(throws: InflateError.corrupt(name == "overrun.gz" ? "invalid bit length repeat" : "invalid literal/length code")) {
                try zlibInflate(body)
            }
        }
    }

    @Test func capsAreZlibs() throws {
        let gzip = Deflater.compress(payload, format: .gzip)
        #expect(try inflate(gzip, max: payload.count).whole)
        #expect(throws: InflateError.tooLarge(limit: payload.count - 1)) { try inflate(gzip, max: payload.count - 1) }
    }

    /// A bomb over the hold limit streams through zlib and stops at the cap while it arrives.
    @Test func aLargeBombStillStopsWhileStreaming() throws {
        let bomb = Deflater.compress([UInt8](repeating: 0, count: 64 << 20), format: .gzip, level: 9)
        let inflater = BodyInflater(coding: .gzip, maxOutput: 1 << 20, holdLimit: bomb.count / 2)
        #expect(throws: InflateError.tooLarge(limit: 1 << 20)) {
            try inflater.feed(bomb[..<(bomb.count / 2)])
            try inflater.feed(bomb[(bomb.count / 2)...])
        }
        #expect(!inflater.inflatedWhole)
    }

    @Test(arguments: [(Deflater.Format.zlib, ContentCoding.deflate), (.raw, .deflate), (.gzip, .identity)])
    func otherCodingsStayWithZlib(format: Deflater.Format, coding: ContentCoding) throws {
        let body = coding == .identity ? payload : Deflater.compress(payload, format: format)
        let (output, whole) = try inflate(body, coding, chunk: 100)
        #expect(output == payload)
        #expect(!whole)
    }

    /// A header that rules the fast path out hands the body to zlib at once: the error comes while feeding.
    @Test func aBadHeaderFailsWhileFeeding() {
        let inflater = BodyInflater(coding: .gzip, maxOutput: 1 << 20)
        #expect(throws: InflateError.self) { try inflater.feed(Array("not gzip at all".utf8)) }
    }

    /// Every seed, in every coding and several chunk sizes, through the oracle the fuzz harness runs.
    @Test func seedsAgreeWithZlib() throws {
        let folder = TestPaths.repositoryRoot.appendingPathComponent("Fuzz/seeds")
        var wholeMembers = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() {
            let body = try seed(name)[...]
            for coding in [ContentCoding.identity, .gzip, .deflate] {
                for chunk in [1, 49, 1 << 20] {
                    let (json, difference) = InflateOracle.inflate(body, coding: coding, chunk: chunk, maxOutput: 1 << 20)
                    #expect(difference == nil, "\(name) \(coding) \(chunk)")
                    if coding == .gzip, json != nil, WholeMemberInflater.inflate(Array(body), maxOutput: 1 << 20) != nil {
                        wholeMembers += 1
                    }
                }
            }
        }
        #expect(wholeMembers >= 30)
    }

    func zlibInflate(_ body: [UInt8]) throws -> [UInt8] {
        let inflater = StreamingInflater(coding: .gzip, maxOutput: 8 << 20)
        try inflater.feed(body)
        return try inflater.finish()
    }
}
