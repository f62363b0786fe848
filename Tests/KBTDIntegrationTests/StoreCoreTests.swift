import Foundation
import KBTDCore
@testable import KBTDStore
import Testing

/// The commit's decisions computed once (`CommitPlan`) and the migrator (the index's
/// admission rule is KBTDCore's, `IndexAdmissionTests`).
@Suite("Store core: one commit plan, one migrator")
struct StoreCoreTests {
    @Test func aPlanClaimsEachIDOnceInIDOrderAndCountsOnlyNewBatches() {
        var plan = CommitPlan([pendingBatch("b", receivedAt: 7_300, heights: [336]),
                               pendingBatch("a", receivedAt: 7_200, heights: [336, 337]),
                               pendingBatch("b", receivedAt: 7_300, heights: [336]),
                               pendingBatch("c", receivedAt: 3_700, heights: [392])])
        #expect(plan.claims.map(\.batchID) == ["a", "b", "c"])
        #expect(plan.now == 7_300)
        // "c" was stored by an earlier commit: the database did not give it to this one.
        plan.settle(claimed: ["a", "b"])
        #expect(plan.stored == [true, true, false, false])
        #expect(plan.added.animations.values.reduce(0, +) == 3)
        #expect(plan.trustedKeys.count == 1)
        #expect(plan.hourlyIngest == [HourlyIngest(hour: 7_200, batches: 2, samples: 3, rejected: 2)])
        #expect(plan.ledgers.isEmpty, "trusted batches spend no budget")
    }

    @Test func aPlanBucketsHoursAndSpendsOnlyNewUntrustedBatches() {
        let source = SourceID(network: "198.51.100.7")
        var plan = CommitPlan([pendingBatch("x", receivedAt: 90_000, source: source),
                               pendingBatch("y", receivedAt: 3_599, source: source),
                               pendingBatch("z", receivedAt: 3_600)])
        plan.settle(claimed: ["x", "y", "z"])
        #expect(plan.hourlyIngest.map(\.hour) == [0, 3_600, 90_000])
        #expect(plan.ledgers.map(\.day) == [0, 1], "one ledger per UTC day, in day order")
        plan.settle(claimed: ["z"])
        #expect(plan.ledgers.isEmpty, "retries spend nothing")
    }

    @Test func theIndexDeltaPassesAdmittedKeysAndEveryScreen() throws {
        var plan = CommitPlan([pendingBatch("1", model: "iPhone17,1", screen: ScreenSize("402x874")),
                               pendingBatch("2", model: "iPhone16,2")])
        plan.settle(claimed: ["1", "2"])
        let admitted = try #require(plan.added.seriesKeys.first { $0.model == "iPhone16,2" })
        let other = try #require(plan.added.seriesKeys.first { $0.model == "iPhone17,1" })
        // Of the release sources, only those the commit stored first, of passing keys (the index counts them).
        let stored: [ReleaseKey: Set<SourceID>] = [ReleaseKey(series: admitted, minor: 2): [.trusted],
                                                   ReleaseKey(series: other, minor: 2): [.trusted]]
        let delta = plan.indexDelta(passing: [admitted], newReleaseSources: stored, newScreenSources: [:])
        #expect(delta.seriesKeys == [admitted])
        #expect(delta.screens == plan.added.screens && !delta.screens.isEmpty)
        #expect(delta.releaseSources == [ReleaseKey(series: admitted, minor: 2): [.trusted]])
        #expect(plan.indexDelta(passing: [admitted], newReleaseSources: [:], newScreenSources: [:]).releaseSources.isEmpty)
    }

    @Test func aCommitWhoseKeysAllPassGivesTheIndexItsCountsWhole() throws {
        var plan = CommitPlan([pendingBatch("1", model: "iPhone17,1", heights: [336, 337, 336, 209], screen: ScreenSize("402x874")),
                               pendingBatch("2", model: "iPhone16,2", heights: [346]),
                               pendingBatch("3", model: "iPhone17,1", heights: [336])])
        plan.settle(claimed: ["1", "2", "3"])
        #expect(plan.addedKeys == plan.added.seriesKeys && plan.addedKeys.count == 3)
        #expect(plan.trustedKeys == plan.addedKeys, "every new batch is a trusted peer's")
        let key = try #require(plan.addedKeys.first { $0.model == "iPhone16,2" })
        let stored: [ReleaseKey: Set<SourceID>] = [ReleaseKey(series: key, minor: 1): [.trusted]]
        // What filtering each table by the passing keys gives, when every key passes.
        var expected = plan.added.filter { _ in true }
        expected.screens = plan.added.screens
        expected.releaseSources = stored
        #expect(plan.indexDelta(passing: plan.addedKeys, newReleaseSources: stored, newScreenSources: [:]) == expected)
        // One key fewer: its counts stay out, as before.
        let fewer = plan.addedKeys.subtracting([key])
        let filtered = plan.indexDelta(passing: fewer, newReleaseSources: stored, newScreenSources: [:])
        #expect(filtered.seriesKeys == fewer && filtered.releaseSources.isEmpty)
        #expect(filtered.heights == plan.added.heights.filter { fewer.contains($0.key.series) })
    }

    @Test func theTrustedKeysOfAMixedCommitAreTheTrustedBatchesKeysOnly() {
        var plan = CommitPlan([pendingBatch("t", model: "iPhone17,1"),
                               pendingBatch("u", model: "iPhone16,2", source: SourceID(network: "198.51.100.7"))])
        plan.settle(claimed: ["t", "u"])
        #expect(plan.addedKeys.map(\.model).sorted() == ["iPhone16,2", "iPhone17,1"])
        #expect(plan.trustedKeys.map(\.model) == ["iPhone17,1"])
        // A retry of the trusted batch adds nothing: no trusted keys either.
        plan.settle(claimed: ["u"])
        #expect(plan.trustedKeys.isEmpty && plan.addedKeys.map(\.model) == ["iPhone16,2"])
    }

    @Test func theMigratorNamesThePendingStepsAndRefusesANewerDatabase() throws {
        #expect(try Schema.migrator.pending(after: 0).map(\.version) == Array(1...Schema.latestVersion))
        #expect(try Schema.migrator.pending(after: Schema.latestVersion).isEmpty)
        #expect(try Schema.migrator.pending(after: Schema.latestVersion - 1).map(\.version) == [Schema.latestVersion])
        #expect(throws: NewerSchemaVersion.self) { try Schema.migrator.pending(after: Schema.latestVersion + 1) }
    }

    @Test func aTransactionRollsBackWhatItsBodyWroteWhenTheBodyThrows() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let db = try SQLiteConnection(path: directory.appendingPathComponent("t.sqlite").path, mode: .readWrite)
        try db.execute("CREATE TABLE t (x INTEGER)")
        struct Stop: Error {}
        #expect(throws: Stop.self) {
            try db.inTransaction(.immediate) {
                try db.execute("INSERT INTO t VALUES (1)")
                throw Stop()
            }
        }
        #expect(!db.isInsideTransaction)
        try db.inTransaction(.immediate) {
            try db.execute("INSERT INTO t VALUES (2)")
            // A nested call runs inside the open transaction: the outer one decides.
            try db.inTransaction { try db.execute("INSERT INTO t VALUES (3)") }
        }
        var rows: [Int64] = []
        try db.prepare("SELECT x FROM t ORDER BY x").forEachRow { rows.append($0.int(0)) }
        #expect(rows == [2, 3])
    }
}

@Suite("Store core on both stores: the one admission rule", .ownThreads, .serialized)
struct StoreCoreConformanceTests {
    /// One place left in the index: both stores give it to the strongest confirmed
    /// candidate (a trusted peer's key), not to the first in key order.
    @Test(arguments: StoreKind.available)
    func theLastPlaceGoesToTheStrongestCandidate(kind: StoreKind) async throws {
        let subject = try StoreUnderTest(kind)
        let store = try await subject.open(admission: IndexAdmission(minSources: 3, maxIndexedKeys: 2))
        #expect(try await store.commit([pendingBatch("first", model: "iPhone10,1")]).admitted == 1)
        let networks = ["198.51.100.1", "198.51.100.2", "198.51.100.3"].map { SourceID(network: $0) }
        let result = try await store.commit(networks.enumerated().map { index, source in
            pendingBatch("weak-\(index)", model: "iPhone1,1", source: source)
        } + [pendingBatch("strong", model: "iPhone9,9")])
        #expect(result.admitted == 1)
        let models = Set(try await store.loadIndexCounts().seriesKeys.map(\.model))
        #expect(models == ["iPhone10,1", "iPhone9,9"])
    }
}
