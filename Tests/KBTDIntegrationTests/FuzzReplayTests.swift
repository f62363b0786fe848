import Foundation
import Testing

@Suite("Fuzz corpus replay", .ownThreads, .timeLimit(.minutes(10)))
struct FuzzReplayTests {
    /// The seeds and every past finding go through the same harness libFuzzer
    /// drives (built without the fuzzer runtime): none may trap.
    @Test func seedsAndRegressionsReplayWithoutATrap() throws {
        let binary = URL(fileURLWithPath: TestPaths.kbtdBinary).deletingLastPathComponent().appendingPathComponent("kbtd-fuzz").path
        let fuzz = TestPaths.repositoryRoot.appendingPathComponent("Fuzz")
        let seeds = try FileManager.default.contentsOfDirectory(atPath: fuzz.appendingPathComponent("seeds").path)
        #expect(seeds.count >= 30)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = [fuzz.appendingPathComponent("seeds").path, fuzz.appendingPathComponent("regressions").path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(text.contains("replayed \(seeds.count + ((try? FileManager.default.contentsOfDirectory(atPath: fuzz.appendingPathComponent("regressions").path).count) ?? 0)) inputs"))
    }
}
