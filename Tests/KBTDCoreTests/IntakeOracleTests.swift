import Foundation
import KBTDCompression
import KBTDCore
import Testing

/// `BatchIntake` (the daemon's single pass) against the reference tree parser
/// and validator, through `IntakeOracle`: the fuzz corpus and hand-written
/// tricky documents must get the same decision, error and counts from both.
@Suite("Intake differential oracle")
struct IntakeOracleTests {
    // The documents are shared with the counting intake's tests (KBTDServerTests): KBTDTestSupport/IntakeDocuments.
    static let now = IntakeDocuments.now
    static let rules = IntakeDocuments.rules
    static let uuid = IntakeDocuments.uuid
    static let device = IntakeDocuments.device
    static let tricky = IntakeDocuments.tricky
    static func sample(_ extra: String = "", t: String = "1763719198", height: String = "336") -> String {
        IntakeDocuments.sample(extra, t: t, height: height)
    }
    static func batch(samples: String, device: String = device, id: String = "\"\(uuid)\"", extra: String = "") -> String {
        IntakeDocuments.batch(samples: samples, device: device, id: id, extra: extra)
    }

    /// Every seed and regression input, decoded as the fuzz harness does (byte 0: encoding, byte 1: chunk size).
    @Test func fuzzCorpusAgrees() throws {
        let fuzz = TestPaths.repositoryRoot.appendingPathComponent("Fuzz")
        var compared = 0
        for directory in ["seeds", "regressions"] {
            let folder = fuzz.appendingPathComponent(directory)
            for name in try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() {
                let input = [UInt8](try Data(contentsOf: folder.appendingPathComponent(name)))
                guard input.count >= 2 else { continue }
                let coding: ContentCoding = [.identity, .gzip, .deflate][Int(input[0] % 3)]
                let inflater = StreamingInflater(coding: coding, maxOutput: 1 << 20)
                guard (try? inflater.feed(input[2...])) != nil, let json = try? inflater.finish() else { continue }
                #expect(IntakeOracle.difference(json: json, now: Self.now, rules: Self.rules) == nil, "\(directory)/\(name)")
                compared += 1
            }
        }
        #expect(compared >= 30)
    }


    @Test func trickyDocumentsAgree() {
        for document in Self.tricky {
            let difference = IntakeOracle.difference(json: Array(document.utf8), now: Self.now, rules: Self.rules)
            #expect(difference == nil, "\(document.prefix(200))")
        }
    }

    /// Bytes a Swift string literal cannot hold: invalid UTF-8 in keys and values, raw and escaped.
    @Test func invalidUTF8Agrees() {
        let head = Array(#"{"batch_id":"\#(Self.uuid)","device":\#(Self.device),"samples":[{"language":""#.utf8)
        for bad: [UInt8] in [[0xFF], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xE2, 0x82], [0xF4, 0x90, 0x80, 0x80], [0xC3, 0xA9]] {
            for tail in [Array(#""}]}"#.utf8), Array(#"\n"}]}"#.utf8)] {
                let document = head + bad + tail
                #expect(IntakeOracle.difference(json: document, now: Self.now, rules: Self.rules) == nil, "\(bad)")
                let key = Array(#"{""#.utf8) + bad + Array(#"":1}"#.utf8)
                #expect(IntakeOracle.difference(json: key, now: Self.now, rules: Self.rules) == nil, "\(bad)")
            }
        }
    }

    /// One series with more distinct bins than the grouped reduction keeps in
    /// its small arrays (16 per table, then a dictionary): the counts still
    /// match the sample-by-sample reduction, repeated bins included.
    @Test func manyBinsInOneSeriesAgree() throws {
        var samples: [String] = []
        for i in 0..<300 {
            let height = 200 + (i % 60) * 3  // 60 distinct height bins, each five times
            let cold = i % 2 == 0 ? #","cold_start_ms":\#(100 + (i % 40) * 37),"preloaded":\#(i % 3 == 0)"# : ""
            samples.append(Self.sample(#","safe_area_bottom":\#(i % 30)\#(cold)"#, height: "\(height)")
                .replacingOccurrences(of: #""duration":0.25,"curve":7"#, with: #""duration":0.\#(i % 25),"curve":\#(i % 16)"#))
        }
        let document = Array(Self.batch(samples: samples.joined(separator: ",")).utf8)
        #expect(IntakeOracle.difference(json: document, now: Self.now, rules: Self.rules) == nil)
        let delta = AggregateDelta(batch: try BatchIntake.validate(json: document, now: Self.now, rules: Self.rules))
        #expect(delta.heights.count == 60)
        #expect(delta.heights.values.allSatisfy { $0 == 5 })
        #expect(delta.safeAreas.count == 30)
        #expect(delta.animations.count > 16)
        #expect(delta.coldStarts.count > 16)
        #expect(delta.animations.values.reduce(0, +) == 300)
    }

    /// Random decimal literals of every length, through `height` and `duration`, compared bit for bit.
    @Test func randomNumbersAgree() {
        var random = SplitMix64(seed: 11)
        var samples: [String] = []
        for _ in 0..<4_000 {
            let digits = Int(random.next() % 20) + 1
            var text = String(random.next() % 9 + 1)
            for _ in 1..<digits { text += String(random.next() % 10) }
            let point = Int(random.next() % UInt64(digits + 1))
            if point > 0, point < digits { text.insert(".", at: text.index(text.startIndex, offsetBy: point)) }
            if random.next() % 3 == 0 { text += "e-\(random.next() % 25)" }
            samples.append(Self.sample(#","accessory_height":0"#, height: text))
            samples.append(#"{"t":1763719198,"event":"hide","language":"en-US","orientation":"portrait","height":1,"duration":0.\#(text.filter(\.isNumber)),"curve":7}"#)
        }
        let document = Self.batch(samples: samples.joined(separator: ","))
        #expect(IntakeOracle.difference(json: Array(document.utf8), now: Self.now, rules: Self.rules) == nil)
        let accepted = (try? BatchIntake.validate(json: Array(document.utf8), now: Self.now, rules: Self.rules))?.samples.count ?? 0
        #expect(accepted > 1_000)
    }

    /// The scanner's fast number reader (eight bytes at a time) at its edges: every
    /// run length around its words, fractions, signs, zeros, exponents right after
    /// the digits, literals it must leave to the general reader, and literals at
    /// the very end of the body (too near the end for a whole word).
    @Test func fastNumbersAgree() {
        var literals = ["0", "-0", "0.0", "-0.0", "0.25", "1", "-1", "01", "-01", "00", "1.", "-", "-.5", ".5", "1e5", "1E+2",
                        "1.5e-3", "0e0", "9007199254740993", "9007199254740992.5", "18446744073709551615", "1234567.1234567",
                        "12345678.1234567", "123456789012345.1234", "0.0000001", "0.00000001", "1.0000000", "336.0-1", "1.2.3"]
        for digits in 1...20 {
            let run = String("12345678901234567890".prefix(digits))
            literals += [run, "-" + run, run + ".5", "0." + run, run + "." + run, run + "e1", run + ".0e-2"]
        }
        for literal in literals {
            for (height, duration) in [(literal, "0.25"), ("336", literal)] {
                let sample = #"{"t":1763719198,"event":"show","language":"en-US","orientation":"portrait","height":\#(height),"duration":\#(duration),"curve":7}"#
                let document = Self.batch(samples: sample + "," + sample)
                #expect(IntakeOracle.difference(json: Array(document.utf8), now: Self.now, rules: Self.rules) == nil, "\(literal)")
                // The literal as the body's last bytes, and a few bytes before the end.
                for tail in ["", "}", "}]}", "}]}   "] {
                    let cut = #"{"batch_id":"\#(Self.uuid)","device":\#(Self.device),"samples":[{"t":1763719198,"height":\#(literal)"# + tail
                    #expect(IntakeOracle.difference(json: Array(cut.utf8), now: Self.now, rules: Self.rules) == nil, "\(literal)\(tail)")
                }
            }
        }
    }

    /// The string shortcuts: events and orientations matched by their quoted
    /// bytes, languages and keyboard types by the bytes of the last such token:
    /// escapes that spell the same text, near misses, other types, changes from
    /// sample to sample, duplicates and unknown members, keys out of order.
    @Test func fastStringsAgree() {
        let values = [#""show""#, #""hide""#, #""change""#, #""sh\u006fw""#, #""showx""#, #""show ""#, #""Show""#, #""portrait""#,
                      #""landscape""#, #""landscap""#, #""portrait\u0000""#, #""en-US""#, #""en\u002dUS""#, #""en-US\n""#, #""ja-JP""#,
                      #""default""#, #""numberPad""#, #""numberpad""#, #""de\"fault""#, #""\u00e9""#, "7", "null", "true", "[]", "{}"]
        for value in values {
            for field in ["event", "orientation", "language", "keyboard_type"] {
                var samples: [String] = []
                for (i, other) in [#""en-US""#, value, value, #""ja-JP""#, value].enumerated() {
                    let keyboard = field == "keyboard_type" ? value : (i % 2 == 0 ? #""default""# : #""numberPad""#)
                    var members = [#""t":1763719198"#, #""event":"show""#, #""language":\#(other)"#, #""orientation":"portrait""#,
                                   #""keyboard_type":\#(keyboard)"#, #""height":336"#, #""duration":0.25"#, #""curve":7"#]
                    let index = ["event": 1, "orientation": 3, "language": 2, "keyboard_type": 4][field]!
                    if field != "language" { members[index] = #""\#(field)":\#(value)"# }
                    if i == 2 { members.swapAt(0, 5) }
                    if i == 3 { members.append(#""x\#(field)":\#(value)"#) }
                    if i == 4 { members.append(#""\#(field)":\#(value)"#) }  // a duplicate: the document is refused
                    samples.append("{" + members.joined(separator: ",") + "}")
                }
                for count in [2, 4, 5] {
                    let document = Self.batch(samples: samples.prefix(count).joined(separator: ","))
                    #expect(IntakeOracle.difference(json: Array(document.utf8), now: Self.now, rules: Self.rules) == nil,
                            "\(field) \(value) \(count)")
                }
            }
        }
    }
}
