import Foundation
import KBTDCore
import KBTDPostgres
import KBTDStore
import Logging
import Testing

@Suite("kbtd migrate: an SQLite installation into PostgreSQL", .serialized, .enabled(if: TestPostgres.available))
struct PostgresMigrateTests {
    @Test func countsMergeByAdditionBatchIDsComeAlongAndASecondRunIsRefused() throws {
        let postgres = try TestPostgres()
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("kbtd.sqlite").path
        // The embedded installation: 30 batches through a real daemon.
        let embedded = TestDaemon(database: file)
        try embedded.start()
        var bodies: [[UInt8]] = []
        for i in 0..<30 {
            let body = gzip(batchBody(screen: "393x852", samples: shows(2, height: i % 3 == 0 ? 392 : 336, language: "ja-JP")))
            bodies.append(body)
            #expect(try embedded.post(body, encoding: "gzip").status == 202)
        }
        #expect(embedded.stop() == 0)
        let before = try SQLiteTelemetryStore(path: file, access: .readOnly).loadCounts()

        // PostgreSQL already holds counts of its own (a node ran there): they add up.
        let node = TestDaemon(database: postgres.url)
        try node.start()
        #expect(try node.post(gzip(batchBody(samples: shows(5, height: 336, language: "ja-JP"))), encoding: "gzip").status == 202)
        #expect(node.stop() == 0)

        let first = try runKBTD(["migrate", "--from", file, "--to", postgres.url])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("60 samples, 30 batch ids (30 new there)"), "\(first.stdout)")
        let second = try runKBTD(["migrate", "--from", file, "--to", postgres.url])
        #expect(second.status == 65)
        #expect(second.stderr.contains("already imported"), "\(second.stderr)")

        let database = PostgresDatabase(url: try PostgresURL(postgres.url), logger: Logger(label: "kbtd-test"))
        defer { database.close() }
        let after = try PostgresTelemetryStore(database: database, migrate: false, forWriting: false).loadCounts()
        // Every height count is the file's plus the node's own 5 samples at 336 pt.
        #expect(after.animations.values.reduce(0, +) == 65)
        #expect(Set(after.heights.keys) == Set(before.heights.keys))
        for (key, count) in after.heights {
            #expect(count == before.heights[key, default: 0] + (key.halfPoints == 672 ? 5 : 0), "\(key)")
        }
        #expect(after.screens == before.screens)

        // A phone's retry after the move is a duplicate on the PostgreSQL node.
        try node.start()
        #expect(try node.post(bodies[7], encoding: "gzip").status == 200)
        let stats = try node.stats()
        #expect(stats["samples"] == .number(65))
        #expect(node.stop() == 0)
    }
}
