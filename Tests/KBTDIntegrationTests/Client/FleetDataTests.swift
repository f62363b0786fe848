import Foundation
import Testing

/// `kbtd-fleet` finds the repository's height tables with no flags, from any working directory.
@Suite("kbtd-fleet finds data/ without flags", .ownThreads, .timeLimit(.minutes(10)))
struct FleetDataTests {
    @Test func runsWithNoDataFlagFromAnEmptyWorkingDirectory() async throws {
        let daemon = try TestDaemon().start()
        let elsewhere = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: elsewhere) }
        let run = try await runProgram(FleetRunTests.binary, ["--url", "http://127.0.0.1:\(daemon.port)", "--devices", "3", "--seed", "4"],
                                       directory: elsewhere)
        #expect(run.status == 0, "\(run.stderr)")
        let tables = TestPaths.repositoryRoot.appendingPathComponent("data").standardizedFileURL.path
        #expect(run.stdout.contains("model families from \(tables),"), "\(run.stdout.prefix(300))")
        #expect(run.stdout.split(separator: "\n").last?.hasPrefix("acknowledged ") == true)
    }
}
