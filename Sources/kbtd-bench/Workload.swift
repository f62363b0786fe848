import Foundation
import KBTDCompression
import KBTDCore

/// Realistic batches of 100 samples (models, languages, accessory views,
/// first-show cold starts), each with its own batch id, gzip-compressed.
struct Workload {
    static let models: [(String, Double, Double)] = [
        ("iPhone17,1", 336, 291), ("iPhone17,2", 362, 318), ("iPhone15,2", 336, 291), ("iPhone14,5", 336, 291),
        ("iPhone16,2", 346, 302), ("iPhone12,1", 346, 301), ("iPhone14,6", 260, 216), ("iPhone18,4", 346, 301),
    ]
    static let languages = ["en-US", "en-US", "en-US", "ja-JP", "zh-Hans", "de-DE", "emoji", "fr-FR"]

    var random: SplitMix64

    init(seed: UInt64) { random = SplitMix64(seed: seed) }

    mutating func next() -> UInt64 { random.next() }

    /// A UUID string from the generator (never repeats within a run).
    mutating func uuid() -> String {
        let a = next(), b = next()
        let hex = String(format: "%016llx%016llx", a, b)
        let c = Array(hex)
        return String(c[0..<8]) + "-" + String(c[8..<12]) + "-4" + String(c[13..<16]) + "-a" + String(c[17..<20]) + "-" + String(c[20..<32])
    }

    /// The JSON of one batch of `count` samples for one device.
    mutating func batchJSON(count: Int = 100, now: Double, model override: String? = nil,
                            language forced: String? = nil) -> [UInt8] {
        let (model, bar, noBar) = Self.models[Int(next() % UInt64(Self.models.count))]
        let language = forced ?? Self.languages[Int(next() % UInt64(Self.languages.count))]
        let cjk = language == "ja-JP" || language == "zh-Hans"
        var samples: [JSONOutput] = []
        samples.reserveCapacity(count)
        for i in 0..<count {
            let landscape = next() % 5 == 0
            let height = (landscape ? 209 : (i == 0 && !cjk ? noBar : bar)) + (cjk ? 8 : 0)
            let accessory: Double = next() % 3 == 0 ? 44 : 0
            var members: [(String, JSONOutput)] = [
                ("t", .double(now - Double(next() % 86_400))),
                ("event", .string(i % 2 == 0 ? "show" : "hide")),
                ("language", .string(language)),
                ("orientation", .string(landscape ? "landscape" : "portrait")),
                ("keyboard_type", .string("default")),
                ("height", .double(height + accessory)),
                ("accessory_height", .double(accessory)),
                ("safe_area_bottom", .double(landscape ? 21 : 34)),
                ("duration", .double(0.25)),
                ("curve", .int(7)),
            ]
            if i == 0 {
                members.append(("cold_start_ms", .double(250 + Double(next() % 1500))))
                members.append(("preloaded", .bool(next() % 3 == 0)))
            }
            samples.append(.object(members))
        }
        let document = JSONOutput.object([
            ("batch_id", .string(uuid())),
            ("device", .object([("model", .string(override ?? model)), ("os", .string("26.1")),
                                ("app", .string("com.example.chat")), ("app_version", .string("3.2.0"))])),
            ("samples", .array(samples)),
        ])
        return Array(document.serialized().utf8)
    }

    /// A complete POST request for one gzip batch.
    static func request(gzipBody body: [UInt8]) -> [UInt8] {
        Array("POST /v1/batches HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
    }

    static func gzip(_ bytes: [UInt8]) -> [UInt8] { Deflater.compress(bytes, format: .gzip) }
}
