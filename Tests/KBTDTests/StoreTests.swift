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
