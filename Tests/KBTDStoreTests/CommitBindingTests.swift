import CSQLite
import Foundation
@testable import KBTDCore
@testable import KBTDStore
import Testing

/// A commit binds each row's parameters in place (`SQLiteBinder`: texts read by
/// SQLite where Swift keeps them, no array of values a row) and SQLite keeps no allocation
/// statistics. The stored rows must be exactly what the commit carried, whatever the texts:
/// short ones Swift stores inline, long ones on the heap, and non-ASCII ones.
@Suite("A commit's rows bound in place", .ownThreads)
struct CommitBindingTests {
    static let keys: [(model: String, language: String)] = [
        ("iPhone17,1", "en-US"),  // both short enough for Swift to keep inline
        ("iPad16,3 Wi-Fi + Cellular (M4, 2024)", "zh-Hant-TW-x-private-use"),  // both on the heap
        ("iPhone18,4", "日本語-JP"),  // non-ASCII
    ]

    static func commits() -> [[PendingBatch]] {
        (0..<3).map { round in
            keys.enumerated().map { i, key in
                var delta = ReleaseFleet.batch(model: key.model, os: round == 2 ? "26.2" : "26.1", language: key.language,
                                               height: 330 + Double(i) * 6, count: 10 + i)
                delta.recordDay(receivedAt: 86_400 * 20_000 + Int64(round))
                return PendingBatch(batchID: "batch-\(round)-\(i)-\(key.model)", receivedAt: 86_400 * 20_000 + Int64(round),
                                    model: key.model, os: round == 2 ? "26.2" : "26.1", accepted: 10 + i, rejected: 0, delta: delta)
            }
        }
    }

    @Test func storedRowsAreTheCommitsCountsForShortLongAndNonASCIITexts() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("kbtd.sqlite").path
        let store = try SQLiteTelemetryStore(path: path)
        var expected = AggregateDelta()
        for commit in Self.commits() {
            #expect(try store.commit(commit).stored == Array(repeating: true, count: commit.count))
            for batch in commit { expected.merge(batch.delta) }
        }
        let stored = try store.loadCounts()
        #expect(!stored.heights.isEmpty && stored.heights == expected.heights)
        #expect(stored.animations == expected.animations)
        #expect(stored.votes == expected.votes)
        #expect(!stored.releases.isEmpty && stored.releases == expected.releases)
        #expect(!stored.dayVotes.isEmpty && stored.dayVotes == expected.dayVotes)
        // Every key's texts as they were sent, in every keyed table the commit wrote.
        let sent = Set(Self.keys.map { "\($0.model)|\($0.language)" })
        for table in ["height_counts", "height_votes", "release_counts", "day_votes", "key_sources", "keys"] {
            var texts: Set<String> = []
            try SQLiteConnection(path: path, mode: .readOnly).prepare("SELECT DISTINCT model, language FROM \(table)")
                .forEachRow { texts.insert("\($0.text(0))|\($0.text(1))") }
            #expect(texts == sent, "\(table)")
        }
        // The batch ids, models and OS versions, bound in place too.
        var batches: Set<String> = []
        try SQLiteConnection(path: path, mode: .readOnly).prepare("SELECT batch_id, model, os FROM batches")
            .forEachRow { batches.insert("\($0.text(0))|\($0.text(1))|\($0.text(2))") }
        #expect(batches == Set(Self.commits().joined().map { "\($0.batchID)|\($0.model)|\($0.os)" }))
        // A second commit of the same batches stores nothing (exactly-once is read from the same bound ids).
        #expect(try store.commit(Self.commits()[0]).stored == Array(repeating: false, count: Self.keys.count))
    }

    @Test func sqliteKeepsNoAllocationStatistics() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteTelemetryStore(path: directory.appendingPathComponent("kbtd.sqlite").path)
        _ = try store.commit(Self.commits()[0])
        // With statistics on, every allocation is counted (and takes SQLite's global mutex).
        #expect(sqlite3_memory_used() == 0)
    }
}
