import CSQLite
import KBTDCore

/// `TelemetryStore` on SQLite: WAL, `synchronous=FULL`, one transaction per
/// group commit, one upsert per key touched.
public final class SQLiteTelemetryStore: TelemetryStore {
    /// Opening read-only (for `kbtd stats`) never creates or migrates.
    public enum Access: Sendable { case readWrite, readOnly }

    private let db: SQLiteConnection
    private var statements: [String: SQLiteStatement] = [:]
    public let path: String

    /// Opens (creating and migrating when read-write) the database at `path`.
    public init(path: String, access: Access = .readWrite) throws(SQLiteError) {
        self.path = path
        if access == .readOnly {
            do {
                db = try Self.openReadOnly(path, mode: .readOnly)
            } catch {
                // No WAL index to share and no way to create one (read-only file system,
                // daemon stopped): read the file as it is.
                db = try Self.openReadOnly(path, mode: .immutable)
            }
            return
        }
        db = try SQLiteConnection(path: path, mode: .readWrite)
        try db.execute("PRAGMA busy_timeout = 5000;")
        if access == .readWrite {
            // SQLite silently opens a file on a read-only file system read-only: refuse instead.
            guard sqlite3_db_readonly(db.handle, "main") != 1 else {
                throw SQLiteError(code: SQLITE_READONLY, message: "the database file or its file system is read-only",
                                  context: "opening \(path)")
            }
            try db.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
            try migrate()
        }
    }

    /// Opens read-only and checks that the file holds a kbtd schema.
    private static func openReadOnly(_ path: String, mode: SQLiteConnection.Mode) throws(SQLiteError) -> SQLiteConnection {
        let connection = try SQLiteConnection(path: path, mode: mode)
        try connection.execute("PRAGMA busy_timeout = 5000;")
        var version = 0
        let statement = try connection.prepare(
            "SELECT COALESCE((SELECT MAX(version) FROM schema_migrations), 0) WHERE EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'schema_migrations')")
        try statement.forEachRow { version = Int($0.int(0)) }
        guard version > 0 else {
            throw SQLiteError(code: SQLITE_NOTADB, message: "not a kbtd database (no schema)", context: "opening \(path)")
        }
        return connection
    }

    // MARK: Migrations

    private func appliedVersion() throws(SQLiteError) -> Int {
        var exists = false
        try db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
            .forEachRow { _ in exists = true }
        guard exists else { return 0 }
        var version = 0
        try db.prepare("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").forEachRow { version = Int($0.int(0)) }
        return version
    }

    private func migrate() throws(SQLiteError) {
        try db.execute("""
            CREATE TABLE IF NOT EXISTS schema_migrations (
                version    INTEGER PRIMARY KEY,
                name       TEXT NOT NULL,
                applied_at INTEGER NOT NULL
            );
            """)
        let current = try appliedVersion()
        guard current <= Schema.latestVersion else {
            throw SQLiteError(code: SQLITE_ERROR, message: "database schema version \(current) is newer than this kbtd (\(Schema.latestVersion))",
                              context: "opening \(path)")
        }
        for migration in Schema.migrations where migration.version > current {
            try db.execute("BEGIN IMMEDIATE;")
            do {
                try db.execute(migration.sql)
                try statement("INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, strftime('%s','now'))")
                    .run([.int(Int64(migration.version)), .text(migration.name)])
                try db.execute("COMMIT;")
            } catch {
                try? db.execute("ROLLBACK;")
                throw error
            }
        }
    }

    private func statement(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        if let cached = statements[sql] { return cached }
        let prepared = try db.prepare(sql)
        statements[sql] = prepared
        return prepared
    }

    // MARK: SQL, named by what it does

    private static let insertBatchID = """
        INSERT OR IGNORE INTO batches(batch_id, received_at, model, os, accepted, rejected) VALUES (?, ?, ?, ?, ?, ?)
        """
    private static let upsertHeightCounts = """
        INSERT INTO height_counts(model, os_major, language, orientation, keyboard_type, placement, height_bin, count)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT DO UPDATE SET count = count + excluded.count
        """
    private static let upsertAnimationCounts = """
        INSERT INTO animation_counts(model, os_major, language, orientation, keyboard_type, event, duration_ms, curve, count)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT DO UPDATE SET count = count + excluded.count
        """
    private static let upsertColdStartCounts = """
        INSERT INTO cold_start_counts(model, os_major, language, orientation, keyboard_type, preloaded, bucket, bucket_ms, count)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT DO UPDATE SET count = count + excluded.count
        """
    private static let upsertSafeAreaCounts = """
        INSERT INTO safe_area_counts(model, os_major, language, orientation, keyboard_type, safe_area_bin, count)
        VALUES (?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT DO UPDATE SET count = count + excluded.count
        """

    private static let upsertHeightVotes = """
        INSERT INTO height_votes(model, os_major, language, orientation, keyboard_type, height_bin, votes)
        VALUES (?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT DO UPDATE SET votes = votes + excluded.votes
        """
    /// Remembers up to 8 sources per key: enough to tell one source from several.
    private static let insertKeySource = """
        INSERT OR IGNORE INTO key_sources(model, os_major, language, orientation, keyboard_type, source)
        SELECT ?1, ?2, ?3, ?4, ?5, ?6
        WHERE (SELECT COUNT(*) FROM key_sources WHERE model = ?1 AND os_major = ?2 AND language = ?3
               AND orientation = ?4 AND keyboard_type = ?5) < 8
        """

    /// Samples ingested per hour: the dashboard's "samples over time".
    private static let upsertHourlyIngest = """
        INSERT INTO hourly_ingest(hour, batches, samples, rejected) VALUES (?, ?, ?, ?)
        ON CONFLICT DO UPDATE SET batches = batches + excluded.batches, samples = samples + excluded.samples,
            rejected = rejected + excluded.rejected
        """

    private static func keyValues(_ key: SeriesKey) -> [SQLiteValue] {
        [.text(key.model), .int(Int64(key.osMajor)), .text(key.language), .text(key.orientation.rawValue), .text(key.keyboardType)]
    }

    // MARK: TelemetryStore

    public func commit(_ batches: [PendingBatch]) throws -> CommitResult {
        try db.execute("BEGIN IMMEDIATE;")
        do {
            var stored: [Bool] = []
            stored.reserveCapacity(batches.count)
            var added = AggregateDelta()
            let insertBatch = try statement(Self.insertBatchID)
            for batch in batches {
                try insertBatch.run([.text(batch.batchID), .int(batch.receivedAt), .text(batch.model), .text(batch.os),
                                     .int(Int64(batch.accepted)), .int(Int64(batch.rejected))])
                let isNew = db.changes == 1
                stored.append(isNew)
                if isNew { added.merge(batch.delta) }
            }
            try write(added)
            try writeHourlyIngest(batches, stored: stored)
            try db.execute("COMMIT;")
            return CommitResult(stored: stored, added: added)
        } catch {
            try? db.execute("ROLLBACK;")
            throw error
        }
    }

    private func writeHourlyIngest(_ batches: [PendingBatch], stored: [Bool]) throws(SQLiteError) {
        var hours: [Int64: (batches: Int64, samples: Int64, rejected: Int64)] = [:]
        for (batch, isNew) in zip(batches, stored) where isNew {
            hours[batch.receivedAt / 3600 * 3600, default: (0, 0, 0)].batches += 1
            hours[batch.receivedAt / 3600 * 3600, default: (0, 0, 0)].samples += Int64(batch.accepted)
            hours[batch.receivedAt / 3600 * 3600, default: (0, 0, 0)].rejected += Int64(batch.rejected)
        }
        let upsert = try statement(Self.upsertHourlyIngest)
        for (hour, counts) in hours {
            try upsert.run([.int(hour), .int(counts.batches), .int(counts.samples), .int(counts.rejected)])
        }
    }

    private func write(_ delta: AggregateDelta) throws(SQLiteError) {
        let heights = try statement(Self.upsertHeightCounts)
        for (key, count) in delta.heights {
            try heights.run(Self.keyValues(key.series) + [.text(key.placement.rawValue), .double(HeightBin.points(key.halfPoints)), .int(count)])
        }
        let animations = try statement(Self.upsertAnimationCounts)
        for (key, count) in delta.animations {
            try animations.run(Self.keyValues(key.series) + [.text(key.event.rawValue), .int(Int64(key.bin.durationMs)),
                                                             .int(Int64(key.bin.curve)), .int(count)])
        }
        let coldStarts = try statement(Self.upsertColdStartCounts)
        for (key, count) in delta.coldStarts {
            try coldStarts.run(Self.keyValues(key.series) + [.int(key.preloaded ? 1 : 0), .int(Int64(key.bucket)),
                                                             .double(LogBucket.value(key.bucket)), .int(count)])
        }
        let safeAreas = try statement(Self.upsertSafeAreaCounts)
        for (key, count) in delta.safeAreas {
            try safeAreas.run(Self.keyValues(key.series) + [.double(HeightBin.points(key.halfPoints)), .int(count)])
        }
        let votes = try statement(Self.upsertHeightVotes)
        for (key, count) in delta.votes {
            try votes.run(Self.keyValues(key.series) + [.double(HeightBin.points(key.halfPoints)), .int(count)])
        }
        let sources = try statement(Self.insertKeySource)
        for (series, ids) in delta.sources {
            for id in ids {
                try sources.run(Self.keyValues(series) + [.int(Int64(bitPattern: id.value))])
            }
        }
    }

    public func loadCounts() throws -> AggregateDelta {
        var delta = AggregateDelta()
        func series(_ row: SQLiteRow) -> SeriesKey? {
            guard let orientation = Orientation(rawValue: row.text(3)) else { return nil }
            return SeriesKey(model: row.text(0), osMajor: Int(row.int(1)), language: row.text(2),
                             orientation: orientation, keyboardType: row.text(4))
        }
        let keyColumns = "model, os_major, language, orientation, keyboard_type"
        try db.execute("BEGIN;")
        defer { try? db.execute("COMMIT;") }
        try statement("SELECT \(keyColumns), placement, height_bin, count FROM height_counts").forEachRow { row in
            guard let key = series(row), let placement = Placement(rawValue: row.text(5)) else { return }
            delta.heights[HeightCountKey(series: key, placement: placement, halfPoints: HeightBin.halfPoints(row.double(6))),
                          default: 0] += row.int(7)
        }
        try statement("SELECT \(keyColumns), event, duration_ms, curve, count FROM animation_counts").forEachRow { row in
            guard let key = series(row), let event = KeyboardEvent(rawValue: row.text(5)) else { return }
            delta.animations[AnimationCountKey(series: key, event: event,
                                               bin: AnimationBin(durationMs: Int(row.int(6)), curve: Int(row.int(7)))),
                             default: 0] += row.int(8)
        }
        try statement("SELECT \(keyColumns), preloaded, bucket, count FROM cold_start_counts").forEachRow { row in
            guard let key = series(row) else { return }
            delta.coldStarts[ColdStartCountKey(series: key, preloaded: row.int(5) != 0, bucket: Int(row.int(6))),
                             default: 0] += row.int(7)
        }
        try statement("SELECT \(keyColumns), safe_area_bin, count FROM safe_area_counts").forEachRow { row in
            guard let key = series(row) else { return }
            delta.safeAreas[SeriesBin(series: key, halfPoints: HeightBin.halfPoints(row.double(5))), default: 0] += row.int(6)
        }
        try statement("SELECT \(keyColumns), height_bin, votes FROM height_votes").forEachRow { row in
            guard let key = series(row) else { return }
            delta.votes[SeriesBin(series: key, halfPoints: HeightBin.halfPoints(row.double(5))), default: 0] += row.int(6)
        }
        try statement("SELECT \(keyColumns), source FROM key_sources").forEachRow { row in
            guard let key = series(row) else { return }
            delta.sources[key, default: []].insert(SourceID(UInt64(bitPattern: row.int(5))))
        }
        return delta
    }

    public func pruneBatchIDs(receivedBefore cutoff: Int64) throws -> Int {
        try statement("DELETE FROM batches WHERE received_at < ?").run([.int(cutoff)])
        let removed = db.changes
        // Hourly ingest counts share the batch ids' retention (whole hours before the cutoff).
        try statement("DELETE FROM hourly_ingest WHERE hour + 3600 <= ?").run([.int(cutoff)])
        return removed
    }

    public func batchIDCount() throws -> Int {
        var count = 0
        try statement("SELECT COUNT(*) FROM batches").forEachRow { count = Int($0.int(0)) }
        return count
    }

    /// Batches and samples stored per hour from `since` (Unix seconds) on, oldest first;
    /// empty for a database from before the table existed (opened read-only, not migrated).
    public func hourlyIngest(since: Int64) throws -> [HourlyIngest] {
        var exists = false
        try statement("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'hourly_ingest'").forEachRow { _ in exists = true }
        guard exists else { return [] }
        var hours: [HourlyIngest] = []
        try statement("SELECT hour, batches, samples, rejected FROM hourly_ingest WHERE hour >= ? ORDER BY hour")
            .forEachRow([.int(since)]) { row in
                hours.append(HourlyIngest(hour: row.int(0), batches: row.int(1), samples: row.int(2), rejected: row.int(3)))
            }
        return hours
    }

    /// `PRAGMA integrity_check`'s answer (`ok` when sound).
    public func integrityCheck() throws -> String {
        var lines: [String] = []
        try db.prepare("PRAGMA integrity_check").forEachRow { lines.append($0.text(0)) }
        return lines.joined(separator: "\n")
    }
}
