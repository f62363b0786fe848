import Foundation
@testable import KBTDCore
@testable import KBTDStore
import Testing

/// A commit skips writing a trusted source's `key_sources` and `release_sources`
/// rows its writer knows a commit already wrote (`IndexedKeys.knowsTrustedRow`). Skipping must be
/// invisible: every such row is stored once, and the index the rows load is the one the commits
/// built.
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

    /// The rows a skipped write would have written are there: every (key, trusted peer) and
    /// (key, release, trusted peer) the commits carried, once; and the index a reopening loads
    /// from the rows is the one the commits handed it, delta by delta.
    @Test func skippedKnownRowsAreStoredOnceAndTheIndexMatchesTheRows() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("kbtd.sqlite").path
        let store = try SQLiteTelemetryStore(path: path)
        var live = HeightIndex()
        var expected: (keys: Set<String>, releases: Set<String>) = ([], [])
        for commit in Self.commits {
            for batch in commit {
                for (key, ids) in batch.delta.sources where ids.contains(.trusted) { expected.keys.insert("\(key)") }
                for (release, ids) in batch.delta.releaseSources where ids.contains(.trusted) {
                    expected.releases.insert("\(release.series)|\(release.minor)")
                }
            }
            live.apply(try store.commit(commit).added)
        }
        let trusted = Int64(bitPattern: SourceID.trusted.value)
        var keys: [String] = [], releases: [String] = []
        try store.db.prepare("SELECT model, os_major, language, orientation, keyboard_type FROM key_sources WHERE source = ?")
            .forEachRow([.int(trusted)]) { keys.append(SQLiteTelemetryStore.series($0).map { "\($0)" } ?? "?") }
        try store.db.prepare("SELECT model, os_major, language, orientation, keyboard_type, os_minor FROM release_sources WHERE source = ?")
            .forEachRow([.int(trusted)]) { row in
                releases.append((SQLiteTelemetryStore.series(row).map { "\($0)" } ?? "?") + "|\(row.int(5))")
            }
        #expect(!expected.keys.isEmpty && keys.count == expected.keys.count && Set(keys) == expected.keys)
        #expect(!expected.releases.isEmpty && releases.count == expected.releases.count && Set(releases) == expected.releases)
        var reopened = HeightIndex()
        reopened.apply(try SQLiteTelemetryStore(path: path).loadIndexCounts())
        #expect(reopened.releaseCount == live.releaseCount)
        for key in Set(Self.commits.flatMap { $0.flatMap { Array($0.delta.sources.keys) } }) {
            let (loaded, built) = (try #require(reopened.series(key)), try #require(live.series(key)))
            #expect(loaded.heights == built.heights && loaded.votes == built.votes, "\(key)")
            #expect(Set(loaded.sources) == Set(built.sources), "\(key)")
            #expect(reopened.releases(of: key).map(\.minor) == live.releases(of: key).map(\.minor), "\(key)")
            #expect(reopened.releases(of: key).map(\.stats.support) == live.releases(of: key).map(\.stats.support), "\(key)")
        }
    }
}
