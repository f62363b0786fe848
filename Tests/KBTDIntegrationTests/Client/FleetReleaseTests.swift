import Foundation
import KBTDCore
import KBTDStore
import Testing

/// `kbtd-fleet --release-from/--release-share`: when a shifted point release ships, and to how many devices.
@Suite("kbtd-fleet ships a release part-way through the run", .ownThreads, .timeLimit(.minutes(10)))
struct FleetReleaseTests {
    /// The stored batches' OS versions, from the daemon's database once it stopped.
    static func batchOSes(_ daemon: TestDaemon) throws -> [String] {
        #expect(daemon.stop() == 0)
        var oses: [String] = []
        try SQLiteTelemetryStore(path: daemon.database, access: .readOnly).forEachBatchIDs { oses += $0.map(\.os) }
        return oses
    }

    static func run(_ extra: [String]) async throws -> [String] {
        let daemon = try TestDaemon().start()
        let run = try await FleetRunTests.fleet(["--url", "http://127.0.0.1:\(daemon.port)", "--devices", "120", "--seed", "3",
                                                 "--data", TestPaths.fixtures.path, "--os-shift", "26.2:ja-JP=+4"] + extra)
        #expect(run.status == 0, "\(run.stderr)")
        return try batchOSes(daemon)
    }

    @Test func aReleaseRunsOnTheShareOfDevicesAskedFromItsStartAndOnNoneBefore() async throws {
        // As the tables say: some of the newest phones run 26.2.
        let tables = try await Self.run([])
        #expect(tables.contains { $0.hasPrefix("26.2") })
        // Not shipped within the run: nobody runs it.
        let never = try await Self.run(["--release-from", "1"])
        #expect(!never.contains { $0.hasPrefix("26.2") } && never.count == tables.count)
        // Shipped to nobody: the same.
        #expect(try await !Self.run(["--release-share", "0"]).contains { $0.hasPrefix("26.2") })
        // Shipped halfway to every device on iOS 26: about half of iOS 26 batches (devices differ in sessions).
        let half = try await Self.run(["--release-from", "0.5", "--release-share", "1"])
        let on26 = half.filter { $0.hasPrefix("26.") }
        let on262 = on26.filter { $0.hasPrefix("26.2") }.count
        #expect(on262 > on26.count / 4 && on262 < on26.count * 3 / 4, "\(on262) of \(on26.count)")
        #expect(half.count == tables.count)
    }

    @Test func badRolloutFlagsAreRefusedNamingTheFlag() async throws {
        let outside = try await FleetRunTests.fleet(["--os-shift", "26.2=4", "--release-share", "1.5"])
        #expect(outside.status == 64 && outside.stderr.contains("--release-share"))
        let before = try await FleetRunTests.fleet(["--os-shift", "26.2=4", "--release-from", "-1"])
        #expect(before.status == 64 && before.stderr.contains("--release-from"))
        let noRelease = try await FleetRunTests.fleet(["--os-shift", "26=4", "--release-from", "0.5"])
        #expect(noRelease.status == 64 && noRelease.stderr.contains("need a release --os-shift"))
    }
}
