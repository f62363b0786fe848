import Foundation
import KBTDCore
import KBTDStore
import Testing

@Suite("SQLite store")
struct StoreTests {
    func pending(_ id: String, receivedAt: Int64, heights: Int) -> PendingBatch {
        var delta = AggregateDelta()
        let device = Device(model: "iPhone17,1", os: "26.1", osMajor: 26)
        for _ in 0..<heights {
            delta.add(Sample(t: 0, event: .show, language: "en-US", orientation: .portrait, height: 336,
                             duration: 0.25, curve: 7, coldStartMs: 300), device: device)
        }
        return PendingBatch(batchID: id, receivedAt: receivedAt, model: "iPhone17,1", os: "26.1",
                            accepted: heights, rejected: 0, delta: delta)
    }

    @Test func commitIsIdempotentPerBatchAndPruningForgetsOldIDs() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("kbtd.sqlite").path
        let store = try SQLiteTelemetryStore(path: path)

        let first = try store.commit([pending("a", receivedAt: 100, heights: 2), pending("b", receivedAt: 5_000, heights: 3),
                                      pending("a", receivedAt: 100, heights: 2)])
        #expect(first.stored == [true, true, false])
        #expect(first.added.animations.values.reduce(0, +) == 5)
        #expect(try store.commit([pending("b", receivedAt: 5_000, heights: 3)]).stored == [false])

        #expect(try store.pruneBatchIDs(receivedBefore: 1_000) == 1)
        #expect(try store.batchIDCount() == 1)
        // Past retention a retry counts again: documented behaviour.
        #expect(try store.commit([pending("a", receivedAt: 6_000, heights: 2)]).stored == [true])

        let counts = try store.loadCounts()
        #expect(counts.animations.values.reduce(0, +) == 7)
        #expect(counts.coldStarts.values.reduce(0, +) == 7)
        #expect(try store.integrityCheck() == "ok")
    }

    @Test func reopeningKeepsSchemaAndCountsAndReadOnlyNeverWrites() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("kbtd.sqlite").path
        do {
            let store = try SQLiteTelemetryStore(path: path)
            _ = try store.commit([pending("x", receivedAt: 1, heights: 4)])
        }
        let reopened = try SQLiteTelemetryStore(path: path)
        #expect(try reopened.loadCounts().heights.values.reduce(0, +) == 4)
        let readOnly = try SQLiteTelemetryStore(path: path, access: .readOnly)
        #expect(try readOnly.loadCounts() == reopened.loadCounts())
        #expect(throws: (any Error).self) { try readOnly.commit([pending("y", receivedAt: 1, heights: 1)]) }

        // A file that is not a kbtd database is refused read-only, not created.
        let empty = directory.appendingPathComponent("empty.sqlite").path
        _ = FileManager.default.createFile(atPath: empty, contents: Data())
        #expect(throws: SQLiteError.self) { try SQLiteTelemetryStore(path: empty, access: .readOnly) }
    }
}

@Suite("Key registry: admission to the index and unconfirmed keys")
struct KeyRegistryTests {
    func batch(_ id: String, language: String, source: SourceID, samples: Int = 10) -> PendingBatch {
        var delta = AggregateDelta()
        let device = Device(model: "iPhone17,1", os: "26.1", osMajor: 26)
        for _ in 0..<samples {
            delta.add(Sample(t: 0, event: .show, language: language, orientation: .portrait, height: 336,
                             duration: 0.25, curve: 7), device: device)
        }
        var policy = SourcePolicy()
        policy.apply(to: &delta, source: source, now: 1_000_000)
        var pending = PendingBatch(batchID: id, receivedAt: 1_000, model: "iPhone17,1", os: "26.1",
                                   accepted: samples, rejected: 0, delta: delta)
        pending.source = source
        return pending
    }

    @Test func keysJoinTheIndexOnceConfirmedAndUnconfirmedOnesArePruned() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteTelemetryStore(path: directory.appendingPathComponent("kbtd.sqlite").path)

        // Two networks: stored, not in the index.
        let one = try store.commit([batch("1", language: "fr-FR", source: SourceID(network: "198.51.100.1")),
                                    batch("2", language: "fr-FR", source: SourceID(network: "198.51.100.2"))])
        #expect(one.added.isEmpty && one.admitted == 0)
        // The third network confirms it: everything stored so far goes to the index at once.
        let two = try store.commit([batch("3", language: "fr-FR", source: SourceID(network: "203.0.113.7"))])
        #expect(two.admitted == 1)
        #expect(two.added.animations.values.reduce(0, +) == 30)
        // A trusted peer confirms alone; one network alone never does.
        #expect(try store.commit([batch("4", language: "de-DE", source: .trusted)]).admitted == 1)
        #expect(try store.commit([batch("5", language: "xx-junk", source: SourceID(network: "192.0.2.66"))]).admitted == 0)
        #expect(try store.loadIndexCounts().seriesKeys.map(\.language).sorted() == ["de-DE", "fr-FR"])

        // Past retention only the unconfirmed key goes, with every count it had.
        let pruned = try store.pruneUnconfirmedKeys(firstSeenBefore: 2_000, limit: 100)
        #expect(pruned.map(\.language) == ["xx-junk"])
        #expect(try store.loadCounts().seriesKeys.map(\.language).sorted() == ["de-DE", "fr-FR"])
        var remaining: [String] = []
        try store.forEachKey { remaining.append($0.language) }
        #expect(remaining.sorted() == ["de-DE", "fr-FR"])
        #expect(try store.integrityCheck() == "ok")
    }

    @Test func aDatabaseOfTheEarlierSchemaMigratesItsKeys() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("old.sqlite").path
        // Schema version 2 as the previous release wrote it, with one trusted key and one single-network key.
        try MigrationTests.makeVersion2Database(at: path, rows: """
            INSERT INTO animation_counts VALUES ('iPhone17,1', 26, 'en-US', 'portrait', 'default', 'show', 250, 7, 40),
                                                ('iPhone17,1', 26, 'zz', 'portrait', 'default', 'show', 250, 7, 3);
            INSERT INTO key_sources VALUES ('iPhone17,1', 26, 'en-US', 'portrait', 'default', 0),
                                           ('iPhone17,1', 26, 'zz', 'portrait', 'default', 12345);
            """)
        let store = try SQLiteTelemetryStore(path: path)
        var keys: [String] = []
        try store.forEachKey { keys.append($0.language) }
        #expect(keys.sorted() == ["en-US", "zz"])
        #expect(try store.loadIndexCounts().seriesKeys.map(\.language) == ["en-US"])
    }
}
