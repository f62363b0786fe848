import Foundation
@testable import KBTDCore
@testable import KBTDStore
import Testing

/// A commit skips writing a trusted source's `key_sources` and `release_sources`
/// rows its writer knows a commit already wrote (`IndexedKeys.knowsTrustedRow`). Skipping must be
/// invisible: the same commits with and without it leave the same rows and hand the index the
/// same deltas, in fewer statements.
@Suite("Known trusted source rows are not written again", .ownThreads)
struct KnownSourceRowTests {
    static func batch(_ id: String, model: String, os: String, language: String, at time: Int64, network: Int?) -> PendingBatch {
        var delta = ReleaseFleet.batch(model: model, os: os, language: language, height: 380, count: 25)
        var pending = PendingBatch(batchID: id, receivedAt: time, model: model, os: os, accepted: 25, rejected: 0, delta: delta)
        if let network {
            pending.source = SourceID(network: "192.0.2.\(network)", key: SourceKey(k0: 1, k1: 2))
            delta.releaseSources = [:]
            for key in delta.sources.keys { delta.sources[key] = [pending.source] }
            delta.recordRelease(os: os)
            pending.delta = delta
        }
        return pending
    }

    /// Eight commits over four models, two languages and three releases: trusted batches, and
    /// from the fourth commit on, networks too.
    static var commits: [[PendingBatch]] {
        (0..<8).map { round in
            (0..<6).map { i in
                batch("\(round)-\(i)", model: "iPhone17,\(i % 4)", os: ["26.0", "26.1", "26.2"][(round + i) % 3],
                      language: i % 2 == 0 ? "ja-JP" : "en-US", at: 1_000 + Int64(round) * 100,
                      network: round >= 3 && i % 3 == 0 ? round % 4 : nil)
            }
        }
    }

    static func rows(_ path: String, _ table: String) throws -> [String] {
        var rows: [String] = []
        try SQLiteConnection(path: path, mode: .readOnly)
            .prepare("SELECT quote(model), os_major, language, orientation, keyboard_type, \(table == "release_sources" ? "os_minor, " : "")source, quote(seen_at) FROM \(table) ORDER BY 1, 2, 3, 4, 5, 6, 7")
            .forEachRow { row in rows.append((0..<(table == "release_sources" ? 8 : 7)).map { row.text(Int32($0)) }.joined(separator: "|")) }
        return rows
    }

    @Test func theKnownRowBitsAddNoMemoryToTheWritersEntry() {
        #expect(IndexedKeys.entryStride == 32)
    }

    @Test func skippingKnownRowsChangesNoRowAndNoIndexDeltaInFewerStatements() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var statements: [Bool: Int] = [:]
        var deltas: [Bool: [AggregateDelta]] = [:]
        var paths: [Bool: String] = [:]
        for skipping in [false, true] {
            let path = directory.appendingPathComponent("\(skipping).sqlite").path
            let store = try SQLiteTelemetryStore(path: path)
            store.skipsKnownTrustedRows = skipping
            let start = store.statementRuns.statements
            deltas[skipping] = try Self.commits.map { try store.commit($0).added }
            statements[skipping] = store.statementRuns.statements - start
            paths[skipping] = path
        }
        #expect(deltas[true] == deltas[false])
        for table in ["key_sources", "release_sources"] {
            let written = try Self.rows(paths[true]!, table)
            let unskipped = try Self.rows(paths[false]!, table)
            #expect(!written.isEmpty && written == unskipped, "\(table)")
        }
        let (with, without) = (statements[true]!, statements[false]!)
        #expect(with < without, "\(with) statements with skipping, \(without) without")
        // Reopened, both answer alike.
        let reopened = try SQLiteTelemetryStore(path: paths[true]!).loadIndexCounts()
        #expect(reopened == (try SQLiteTelemetryStore(path: paths[false]!).loadIndexCounts()))
    }
}
