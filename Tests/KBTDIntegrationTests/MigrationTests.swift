import Foundation
import KBTDCore
@testable import KBTDStore
import Testing

@Suite("Schema migrations", .ownThreads, .timeLimit(.minutes(10)))
struct MigrationTests {
    /// A database exactly as kbtd with schema v2 left it, holding `rows` (by default one trusted key's counts).
    static func makeVersion2Database(at path: String, rows: String = """
        INSERT INTO height_counts VALUES ('iPhone17,1', 26, 'en-US', 'portrait', 'default', 'docked', 336.0, 25);
        INSERT INTO height_votes VALUES ('iPhone17,1', 26, 'en-US', 'portrait', 'default', 336.0, 25);
        INSERT INTO key_sources VALUES ('iPhone17,1', 26, 'en-US', 'portrait', 'default', 0);
        INSERT INTO animation_counts VALUES ('iPhone17,1', 26, 'en-US', 'portrait', 'default', 'show', 250, 7, 25);
        """) throws {
        let db = try SQLiteConnection(path: path, mode: .readWrite)
        try db.execute("PRAGMA journal_mode = WAL;")
        try db.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL);")
        for migration in Schema.migrations where migration.version <= 2 {
            try db.execute(migration.sql)
            try db.execute("INSERT INTO schema_migrations VALUES (\(migration.version), '\(migration.name)', 0);")
        }
        try db.execute(rows)
    }

    @Test func aVersion2DatabaseIsReadAndMigratedKeepingItsCounts() throws {
        #expect(Schema.migrations.map(\.version) == Array(1...Schema.latestVersion))
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("old.sqlite").path
        try Self.makeVersion2Database(at: path)

        // `kbtd stats`/`height` open read-only and never migrate: an old file still reads.
        let before = try SQLiteTelemetryStore(path: path, access: .readOnly).loadCounts()
        #expect(before.heights.values.reduce(0, +) == 25 && before.screens.isEmpty)
        let cli = try runKBTD(["height", "--model", "iPhone17,1", "--language", "en-US", "--os", "26", "--database", path])
        #expect(cli.status == 0 && cli.stdout.contains("\"basis\":\"model+os+language\""), "\(cli.stdout) \(cli.stderr)")

        // Opening read-write applies the later steps; the counts stay, and screens are stored from then on.
        let store = try SQLiteTelemetryStore(path: path)
        #expect(try store.loadCounts() == before)
        var delta = AggregateDelta()
        let device = Device(model: "iPhone18,9", os: "26.1", osMajor: 26, screen: ScreenSize("402x874"))
        delta.add(Sample(t: 0, event: .show, language: "en-US", orientation: .portrait, height: 336, duration: 0.25, curve: 7),
                  device: device)
        delta.screens[ModelScreenKey(model: "iPhone18,9", screen: ScreenSize(width: 402, height: 874))] = 1
        _ = try store.commit([PendingBatch(batchID: "b", receivedAt: 1, model: "iPhone18,9", os: "26.1", accepted: 1,
                                           rejected: 0, delta: delta)])
        let after = try SQLiteTelemetryStore(path: path).loadCounts()
        #expect(after.heights.values.reduce(0, +) == 26)
        #expect(after.screens == [ModelScreenKey(model: "iPhone18,9", screen: ScreenSize(width: 402, height: 874)): 1])
        #expect(try store.integrityCheck() == "ok")

        var versions: [Int] = []
        try SQLiteConnection(path: path, mode: .readOnly).prepare("SELECT version FROM schema_migrations ORDER BY version")
            .forEachRow { versions.append(Int($0.int(0))) }
        #expect(versions == Array(1...Schema.latestVersion))
    }

    /// Migration 6 ("index capacity"): a version-5 database's keys get `last_seen` from `first_seen`,
    /// its admitted keys load into the index's support, and a commit moves `last_seen` once a day.
    @Test func aVersion5DatabaseGetsLastSeenFromFirstSeen() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("v5.sqlite").path
        do {
            let db = try SQLiteConnection(path: path, mode: .readWrite)
            try db.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL);")
            for migration in Schema.migrations where migration.version <= 5 {
                try db.execute(migration.sql)
                try db.execute("INSERT INTO schema_migrations VALUES (\(migration.version), '\(migration.name)', 0);")
            }
            try db.execute("""
                INSERT INTO keys VALUES ('iPhone17,1', 26, 'en-US', 'portrait', 'default', 86400, 86400);
                INSERT INTO key_sources VALUES ('iPhone17,1', 26, 'en-US', 'portrait', 'default', 7);
                INSERT INTO keys VALUES ('Idle1,1', 26, 'en-US', 'portrait', 'default', 172800, NULL);
                """)
        }
        let store = try SQLiteTelemetryStore(path: path)
        var lastSeen: [String: Int64] = [:]
        func read() throws {
            try SQLiteConnection(path: path, mode: .readOnly).prepare("SELECT model, last_seen FROM keys")
                .forEachRow { lastSeen[$0.text(0)] = $0.int(1) }
        }
        try read()
        #expect(lastSeen == ["iPhone17,1": 86400, "Idle1,1": 172800])
        _ = try store.commit([pendingBatch("b1", receivedAt: 10 * 86_400 + 5, source: SourceID(network: "10.1.0.1"))])
        _ = try store.commit([pendingBatch("b2", receivedAt: 10 * 86_400 + 50, source: SourceID(network: "10.2.0.1"))])
        try read()
        let moved: Int64 = 10 * 86_400 + 5
        #expect(lastSeen["iPhone17,1"] == moved, "moved by the day's first commit only: \(lastSeen)")
        #expect(try store.pruneIdleKeys(lastSeenBefore: 5 * 86_400, limit: 10).map(\.model) == ["Idle1,1"])
        #expect(try store.integrityCheck() == "ok")
    }

    /// Migration 12 ("day sources"): a version-11 database's days of votes inherit their key's
    /// sources, so a key whose recent votes answered before the upgrade answers the same after it.
    @Test func aVersion11DatabasesDaysInheritTheirKeysSources() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("v11.sqlite").path
        do {
            let db = try SQLiteConnection(path: path, mode: .readWrite)
            try db.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL);")
            for migration in Schema.migrations where migration.version <= 11 {
                try db.execute(migration.sql)
                let name = migration.name.replacingOccurrences(of: "'", with: "''")
                try db.execute("INSERT INTO schema_migrations VALUES (\(migration.version), '\(name)', 0);")
            }
            try db.execute("""
                INSERT INTO keys VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 86400, 86400, 86400);
                INSERT INTO height_counts VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 'docked', 380.0, 100);
                INSERT INTO height_counts VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 'docked', 384.0, 30);
                INSERT INTO height_votes VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 380.0, 100);
                INSERT INTO height_votes VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 384.0, 30);
                INSERT INTO day_votes VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 19970, 380.0, 100);
                INSERT INTO day_votes VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 20000, 384.0, 30);
                INSERT INTO key_sources VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 7, 86400);
                INSERT INTO key_sources VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 8, 86400);
                INSERT INTO key_sources VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 9, 86400);
                """)
        }
        let store = try SQLiteTelemetryStore(path: path)
        let counts = try store.loadIndexCounts()
        let key = SeriesKey(model: "iPhone17,1", osMajor: 26, language: "ja-JP", orientation: .portrait, keyboardType: "default")
        let inherited: Set<SourceID> = [SourceID(7), SourceID(8), SourceID(9)]
        #expect(counts.daySources == [DayKey(series: key, day: 19970): inherited, DayKey(series: key, day: 20000): inherited])
        var index = HeightIndex()
        index.apply(counts)
        #expect(HeightEstimator().estimate(HeightQuery(model: "iPhone17,1", language: "ja-JP", osMajor: 26), in: index).height == 384)
        #expect(try store.integrityCheck() == "ok")
    }
}
