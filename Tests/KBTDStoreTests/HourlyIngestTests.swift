import Foundation
import KBTDCore
import KBTDStore
import Testing

/// The `hourly_ingest` table (migration 5): counts per UTC hour of stored
/// batches, never of retries, pruned with the batch ids.
@Suite("Hourly ingest counts in the store", .ownThreads, .timeLimit(.minutes(10)))
struct HourlyIngestTests {
    static func batch(_ id: String, at receivedAt: Int64, accepted: Int, rejected: Int = 0) -> PendingBatch {
        PendingBatch(batchID: id, receivedAt: receivedAt, model: "iPhone17,1", os: "26.1", accepted: accepted, rejected: rejected,
                     delta: AggregateDelta())
    }

    @Test func countsStoredBatchesPerHourAndPrunesWithTheBatchIDs() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteTelemetryStore(path: directory.appendingPathComponent("kbtd.sqlite").path)
        let hour: Int64 = 1_763_719_200  // a whole UTC hour
        _ = try store.commit([Self.batch("a", at: hour + 5, accepted: 10, rejected: 1), Self.batch("b", at: hour + 3599, accepted: 7)])
        // A retry of "a" in the next hour counts nothing; "c" counts in its own hour.
        let result = try store.commit([Self.batch("a", at: hour + 3600, accepted: 10), Self.batch("c", at: hour + 7300, accepted: 4)])
        #expect(result.stored == [false, true])
        #expect(try store.hourlyIngest(since: 0) == [
            HourlyIngest(hour: hour, batches: 2, samples: 17, rejected: 1),
            HourlyIngest(hour: hour + 7200, batches: 1, samples: 4, rejected: 0),
        ])
        #expect(try store.hourlyIngest(since: hour + 3600).map(\.hour) == [hour + 7200])

        // Pruning batch ids received before hour + 7300 drops the whole hours before it, keeps the current one.
        #expect(try store.pruneBatchIDs(receivedBefore: hour + 7300) == 2)
        #expect(try store.hourlyIngest(since: 0).map(\.hour) == [hour + 7200])
    }

    @Test func theHourlyMigrationFillsTheTableFromTheRememberedBatchIDs() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("kbtd.sqlite").path
        let hour: Int64 = 1_763_719_200
        do {
            let store = try SQLiteTelemetryStore(path: path)
            _ = try store.commit([Self.batch("a", at: hour + 1, accepted: 3, rejected: 2), Self.batch("b", at: hour + 3601, accepted: 5)])
        }
        // Back to the schema before the hourly step (version 5): no table of it or after it, no record of them
        // (6: key_sources.seen_at; 7: the ledger; 8: keys.last_seen; 9: release_counts; 10: day_votes;
        // 11: release_sources; 12: day_sources; 13: screen_counts, screen_sources).
        #expect(try sqlite3(path, """
            DROP TABLE hourly_ingest; ALTER TABLE key_sources DROP COLUMN seen_at; DROP TABLE vote_ledger; DROP TABLE key_quota;
            DROP INDEX keys_by_last_seen; ALTER TABLE keys DROP COLUMN last_seen; DROP TABLE release_counts; DROP TABLE day_votes;
            DROP TABLE release_sources; DROP TABLE day_sources; DROP TABLE screen_counts; DROP TABLE screen_sources;
            DELETE FROM schema_migrations WHERE version >= 5;
            """) == 0)
        #expect(try SQLiteTelemetryStore(path: path, access: .readOnly).hourlyIngest(since: 0).isEmpty, "read-only: not migrated")

        let migrated = try SQLiteTelemetryStore(path: path)
        #expect(try migrated.hourlyIngest(since: 0) == [
            HourlyIngest(hour: hour, batches: 1, samples: 3, rejected: 2),
            HourlyIngest(hour: hour + 3600, batches: 1, samples: 5, rejected: 0),
        ])
    }
}
