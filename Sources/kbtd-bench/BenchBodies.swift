import ArgumentParser
import Foundation
import KBTDCompression
import KBTDCore

/// Writes distinct gzip request bodies for `wrk` (Benchmarks/ingest-bodies.lua):
/// kbtd batches of 100 samples, or the same samples as VictoriaMetrics
/// `/api/v1/import` JSON lines. Each body is preceded by its length (4 bytes, big-endian).
struct Bodies: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Distinct gzip bodies of 100 samples for wrk: kbtd batches or the same samples as VictoriaMetrics JSON lines.")
    enum Format: String, ExpressibleByArgument { case kbtd, victoriametrics }

    @Option var batches = 60_000
    @Option var seed: UInt64 = 5
    @Option var format: Format = .kbtd
    @Option(help: "The file to write.") var output: String

    func run() throws {
        var workload = Workload(seed: seed)
        let now = Date().timeIntervalSince1970
        let rules = FieldRules()
        var file = Data()
        var raw = 0
        for _ in 0..<batches {
            let json = workload.batchJSON(now: now)
            let body: [UInt8]
            switch format {
            case .kbtd: body = json
            case .victoriametrics: body = Self.importLines(try BatchIntake.validate(json: json, now: now, rules: rules))
            }
            raw += body.count
            let gzip = Workload.gzip(body)
            var length = UInt32(gzip.count).bigEndian
            withUnsafeBytes(of: &length) { file.append(contentsOf: $0) }
            file.append(contentsOf: gzip)
        }
        try file.write(to: URL(fileURLWithPath: output))
        print(String(format: "bodies: %d %@ bodies of 100 samples, %.1f KB of JSON and %.1f KB gzip each on average",
                     batches, format.rawValue, Double(raw) / Double(batches) / 1000,
                     Double(file.count - 4 * batches) / Double(batches) / 1000))
    }

    /// One `/api/v1/import` line per sample: the key's dimensions (and the
    /// event and placement) as labels, the height as the value, `t` as the timestamp in ms.
    static func importLines(_ batch: ValidatedBatch) -> [UInt8] {
        var out = ""
        for sample in batch.samples {
            let labels: [(String, String)] = [
                ("__name__", "keyboard_height"), ("model", batch.device.model), ("os", batch.device.os),
                ("app", batch.device.app ?? ""), ("language", sample.language), ("orientation", sample.orientation.rawValue),
                ("keyboard_type", sample.keyboardType), ("event", sample.event.rawValue), ("placement", sample.placement.rawValue),
            ]
            let metric = JSONOutput.object(labels.map { ($0.0, JSONOutput.string($0.1)) })
            let line = JSONOutput.object([
                ("metric", metric), ("values", .array([.double(sample.height)])),
                ("timestamps", .array([.int(Int64((sample.t * 1000).rounded()))])),
            ])
            out += line.serialized()
            out += "\n"
        }
        return Array(out.utf8)
    }
}
