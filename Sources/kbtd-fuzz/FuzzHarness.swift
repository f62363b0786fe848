import KBTDCompression
import KBTDCore
import KBTDReference
import KBTDReport

/// One fuzz input: byte 0 picks the encoding, byte 1 the chunk size the body
/// arrives in, the rest is the body. It runs the ingest path's pure part
/// (inflate with caps, `BatchIntake.count`, aggregation, estimation) exactly as
/// the daemon does, and the differential oracles: zlib alone must give the same
/// bytes or error as `BodyInflater` (`InflateOracle`), and the reference tree
/// parser and validator the same decision, error and counts as both
/// `BatchIntake` passes (counting and materialising; `IntakeOracle`).
/// Any trap is a finding.
enum FuzzHarness {
    static let now = 1_763_719_198.0
    /// The daemon's default `max_samples_per_batch`.
    static let rules = FieldRules(maxSamples: 10_000)
    /// Inflated bytes at most (the daemon's default is 8 MiB; inputs are at most 64 KiB).
    static let maxOutput = 1 << 20

    static func run(_ input: UnsafeBufferPointer<UInt8>) {
        guard input.count >= 2 else { return }
        let coding: ContentCoding = [.identity, .gzip, .deflate][Int(input[0] % 3)]
        let chunk = Int(input[1]) * 16 + 1
        let body = ArraySlice(input[2...])
        // What the daemon inflates with (BodyInflater: libdeflate for a whole gzip member), checked
        // against zlib alone on the same chunks; rejections are the expected outcome for most inputs.
        let (inflated, inflateDifference) = InflateOracle.inflate(body, coding: coding, chunk: chunk, maxOutput: maxOutput)
        if let inflateDifference { fatalError("inflate differs: \(inflateDifference)") }
        guard let json = inflated else { return }
        if let difference = IntakeOracle.difference(json: json, now: now, rules: rules) {
            fatalError("BatchIntake differs from the reference: \(difference)")
        }
        guard let batch = try? BatchIntake.count(json: json, now: now, rules: rules) else { return }
        let delta = batch.delta()
        var weighed = delta
        var policy = SourcePolicy()
        policy.apply(to: &weighed, source: SourceID(network: "203.0.113.0", key: SourceKey(k0: 1, k1: 2)), now: now)
        var index = HeightIndex()
        index.apply(delta)
        for key in index.byModelLanguage.keys {
            _ = HeightEstimator().estimate(
                HeightQuery(model: key.model, language: key.language, osMajor: batch.device.osMajor,
                            orientation: key.orientation, keyboardType: key.keyboardType), in: index).json.serialized()
        }
        _ = StatsFormatter.render(StatsReport.rows(from: delta), as: .table)
    }
}

import Foundation

#if FUZZING
/// libFuzzer's driver, for a program with its own `main` (SwiftPM gives every
/// executable one): `scripts/fuzz` builds with -sanitize=fuzzer and -DFUZZING.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// The callback libFuzzer's runtime requires by name.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data else { return 0 }
    FuzzHarness.run(UnsafeBufferPointer(start: data, count: size))
    return 0
}

@main
struct FuzzMain {
    static func main() {
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, fuzzOneInput))
    }
}
#else
/// Without libFuzzer: replays files (or every file in directories) through the
/// harness, so the seeds and regression inputs run in the ordinary test suite.
@main
struct FuzzReplay {
    static func main() throws {
        var files: [String] = []
        for argument in CommandLine.arguments.dropFirst() {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory) else { continue }
            if isDirectory.boolValue {
                files += try FileManager.default.contentsOfDirectory(atPath: argument).sorted().map { "\(argument)/\($0)" }
            } else {
                files.append(argument)
            }
        }
        for file in files {
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
            bytes.withUnsafeBufferPointer(FuzzHarness.run)
        }
        print("replayed \(files.count) inputs")
    }
}
#endif
