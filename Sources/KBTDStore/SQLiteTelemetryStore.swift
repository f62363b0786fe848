import CSQLite
#if canImport(Glibc)
import Glibc
#endif
import KBTDCore

/// `TelemetryStore` on SQLite: WAL, `synchronous=FULL`, one transaction per
/// group commit, one upsert per key touched.
public final class SQLiteTelemetryStore: TelemetryStore {
    /// Opening read-only (for `kbtd stats`) never creates or migrates.
    public enum Access: Sendable { case readWrite, readOnly }

    let db: SQLiteConnection
    private var statements: [String: SQLiteStatement] = [:]
    public let path: String
    /// When keys join the in-memory index (read by each commit: reloadable).
    private let admission: @Sendable () -> IndexAdmission
    /// Keys admitted to the index and their support (writer side): what a full index keeps.
    private var indexed = IndexedKeys()
    /// The last UTC day whose commit deleted earlier days' ledger rows.
    private var ledgerDay: Int64 = -1

    /// Opens (creating and migrating when read-write) the database at `path`.
    ///
    /// - Parameters:
    ///   - fileMode: permissions of a database file this call creates (the WAL
    ///     and shared-memory files inherit them); an existing file keeps its own.
    ///   - admission: when keys join the in-memory index.
    /// - Throws: `UnusableDatabase` for a file kbtd must not or cannot use
    ///   (another application's, a newer schema, garbage, a directory, a
    ///   folder that does not exist or cannot be written); `SQLiteError` otherwise.
    public init(path: String, access: Access = .readWrite, fileMode: UInt32 = 0o600, walLimitBytes: Int64 = 64 << 20,
                admission: @escaping @Sendable () -> IndexAdmission = { IndexAdmission() }) throws {
        self.path = path
        self.admission = admission
        if access == .readOnly {
            do {
                db = try Self.openReadOnly(path, mode: .readOnly)
            } catch {
                // No WAL index to share and no way to create one (read-only file system,
                // daemon stopped): read the file as it is.
                guard error.code != SQLITE_NOTADB else { throw error }
                db = try Self.openReadOnly(path, mode: .immutable)
            }
            return
        }
        try DatabaseFile.prepare(path, mode: fileMode)
        do {
            db = try SQLiteConnection(path: path, mode: .readWrite)
            try db.execute("PRAGMA busy_timeout = 5000;")
            try Self.checkOwnership(db, path: path)
        } catch let error as SQLiteError where error.code & 0xFF == SQLITE_NOTADB {
            throw UnusableDatabase.notKbtd(path: path, why: "the file is not an SQLite database")
        }
        // SQLite silently opens a file on a read-only file system read-only: refuse instead.
        guard sqlite3_db_readonly(db.handle, "main") != 1 else {
            throw SQLiteError(code: SQLITE_READONLY, message: "the database file or its file system is read-only",
                              context: "opening \(path)")
        }
        try db.execute("""
            PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;
            PRAGMA journal_size_limit = \(walLimitBytes);
            """)
        try migrate()
        try statement(Self.indexedSupport).forEachRow { row in
            if let key = Self.series(row) {
                indexed.insert(key, support: KeySupport(trusted: row.int(7) != 0, sources: Int(row.int(6)), lastSeenDay: row.int(5) / 86_400))
            }
        }
    }

    /// Refuses another application's SQLite file before anything is written to it.
    private static func checkOwnership(_ db: SQLiteConnection, path: String) throws {
        var applicationID: Int64 = 0
        try db.prepare("PRAGMA application_id").forEachRow { applicationID = $0.int(0) }
        if applicationID == Int64(Schema.applicationID) { return }
        guard applicationID == 0 else {
            throw UnusableDatabase.notKbtd(path: path, why: "it belongs to another application (application_id \(applicationID))")
        }
        var tables: [String] = []
        try db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").forEachRow { tables.append($0.text(0)) }
        // Empty (new) or a kbtd database from before application_id was set: ours.
        if tables.isEmpty || tables.contains("schema_migrations") { return }
        throw UnusableDatabase.notKbtd(
            path: path, why: "it holds other tables (\(tables.prefix(3).joined(separator: ", "))) and no kbtd schema")
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

    func hasTable(_ name: String) throws(SQLiteError) -> Bool {
        var exists = false
        try statement("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").forEachRow([.text(name)]) { _ in exists = true }
        return exists
    }

    private func appliedVersion() throws(SQLiteError) -> Int {
        guard try hasTable("schema_migrations") else { return 0 }
        var version = 0
        try db.prepare("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").forEachRow { version = Int($0.int(0)) }
        return version
    }

    /// Brings the schema up to date. Every step, including the first one's
    /// bookkeeping table, runs in one transaction: a crash leaves a version
    /// applied whole or not at all.
    private func migrate() throws {
        let current = try appliedVersion()
        guard current <= Schema.latestVersion else {
            throw UnusableDatabase.newerSchema(path: path, version: current, supported: Schema.latestVersion)
        }
        for migration in Schema.migrations where migration.version > current {
            try db.execute("BEGIN IMMEDIATE;")
            do {
                try db.execute("""
                    CREATE TABLE IF NOT EXISTS schema_migrations (
                        version    INTEGER PRIMARY KEY,
                        name       TEXT NOT NULL,
                        applied_at INTEGER NOT NULL
                    );
                    PRAGMA application_id = \(Schema.applicationID);
                    """)
                try db.execute(migration.sql)
                try statement("INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, strftime('%s','now'))")
                    .run([.int(Int64(migration.version)), .text(migration.name)])
                try db.execute("COMMIT;")
            } catch {
                try? db.execute("ROLLBACK;")
                throw error
            }
        }
        if current == Schema.latestVersion {
            try db.execute("PRAGMA application_id = \(Schema.applicationID);")
        }
    }

    func statement(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
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
    /// A source already remembered only has its last-seen time moved on (`touchKeySource`;
    /// a network's keyed hash is kept `source_retention_days` after that time), so a change
    /// here is a new source of the key (the index's support counts them).
    private static let insertKeySource = """
        INSERT INTO key_sources(model, os_major, language, orientation, keyboard_type, source, seen_at)
        SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7
        WHERE (SELECT COUNT(*) FROM key_sources WHERE model = ?1 AND os_major = ?2 AND language = ?3
               AND orientation = ?4 AND keyboard_type = ?5 AND source <> ?6) < 8
        ON CONFLICT DO NOTHING
        """
    private static let touchKeySource = """
        UPDATE key_sources SET seen_at = MAX(COALESCE(seen_at, ?), ?)
        WHERE model = ? AND os_major = ? AND language = ? AND orientation = ? AND keyboard_type = ? AND source = ?
        """

    /// A random retired identifier (`SourceID`): negative, odd, never derived from an address.
    static let retiredSourceSQL = "-((random() & 9223372036854775807) | 1)"

    /// Batches per model and reported screen (`device.screen`).
    private static let upsertModelScreens = """
        INSERT INTO model_screens(model, screen, count) VALUES (?, ?, ?)
        ON CONFLICT DO UPDATE SET count = count + excluded.count
        """

    /// Samples ingested per hour: the dashboard's "samples over time".
    private static let upsertHourlyIngest = """
        INSERT INTO hourly_ingest(hour, batches, samples, rejected) VALUES (?, ?, ?, ?)
        ON CONFLICT DO UPDATE SET batches = batches + excluded.batches, samples = samples + excluded.samples,
            rejected = rejected + excluded.rejected
        """

    static func keyValues(_ key: SeriesKey) -> [SQLiteValue] {
        [.text(key.model), .int(Int64(key.osMajor)), .text(key.language), .text(key.orientation.rawValue), .text(key.keyboardType)]
    }

    // MARK: TelemetryStore

    /// Registers a key, or moves its `last_seen` to this commit's day (at most one write a key a day).
    private static let registerKey = """
        INSERT INTO keys(model, os_major, language, orientation, keyboard_type, first_seen, admitted_at, last_seen)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL, ?6)
        ON CONFLICT DO UPDATE SET last_seen = excluded.last_seen WHERE keys.last_seen / 86400 < excluded.last_seen / 86400
        """
    private static let touchKey = "UPDATE keys SET last_seen = ? WHERE model = ? AND os_major = ? AND language = ? AND orientation = ? AND keyboard_type = ?"
    private static let evictKey = """
        UPDATE keys SET admitted_at = NULL
        WHERE model = ? AND os_major = ? AND language = ? AND orientation = ? AND keyboard_type = ?
        """
    /// Every admitted key with its support: last seen, distinct sources, trusted.
    private static let indexedSupport = """
        SELECT k.model, k.os_major, k.language, k.orientation, k.keyboard_type, k.last_seen,
               COUNT(s.source), COALESCE(MAX(s.source = 0), 0)
        FROM keys k LEFT JOIN key_sources s ON s.model = k.model AND s.os_major = k.os_major AND s.language = k.language
            AND s.orientation = k.orientation AND s.keyboard_type = k.keyboard_type
        WHERE k.admitted_at IS NOT NULL
        GROUP BY k.model, k.os_major, k.language, k.orientation, k.keyboard_type
        """
    private static let countKeySources = """
        SELECT COUNT(*), COALESCE(MAX(source = 0), 0) FROM key_sources
        WHERE model = ? AND os_major = ? AND language = ? AND orientation = ? AND keyboard_type = ?
        """
    private static let admitKey = """
        UPDATE keys SET admitted_at = ?
        WHERE model = ? AND os_major = ? AND language = ? AND orientation = ? AND keyboard_type = ?
        """
    static let keyColumns = "model, os_major, language, orientation, keyboard_type"
    static let oneKey = "model = ? AND os_major = ? AND language = ? AND orientation = ? AND keyboard_type = ?"

    public func commit(_ batches: [PendingBatch]) throws -> CommitResult {
        try db.execute("BEGIN IMMEDIATE;")
        do {
            var stored: [Bool] = []
            stored.reserveCapacity(batches.count)
            var added = AggregateDelta()
            var trustedKeys: Set<SeriesKey> = []
            let insertBatch = try statement(Self.insertBatchID)
            for batch in batches {
                try insertBatch.run([.text(batch.batchID), .int(batch.receivedAt), .text(batch.model), .text(batch.os),
                                     .int(Int64(batch.accepted)), .int(Int64(batch.rejected))])
                let isNew = db.changes == 1
                stored.append(isNew)
                guard isNew else { continue }
                added.merge(batch.delta)
                if batch.source == .trusted { trustedKeys.formUnion(batch.delta.seriesKeys) }
            }
            let now = batches.map(\.receivedAt).max() ?? 0
            let newSources = try write(added, seenAt: now)
            // A failed commit leaves `indexed` ahead of the database: the writer then drops this
            // store and opens a new one, which reads it again.
            let outcome = try admit(added, trusted: trustedKeys, newSources: newSources, now: now)
            try writeHourlyIngest(batches, stored: stored)
            try writeLedger(batches, stored: stored)
            try db.execute("COMMIT;")
            var result = CommitResult(stored: stored, added: outcome.0, admitted: outcome.1)
            result.evicted = outcome.2
            return result
        } catch {
            try? db.execute("ROLLBACK;")
            throw error
        }
    }

    /// Registers the commit's keys and decides which reach the index: keys
    /// already admitted pass their new counts; a key reported by a trusted
    /// peer or by `minSources` networks is confirmed, and enters the index
    /// while it has room, or else in place of the weakest indexed key it has
    /// more support than (`IndexedKeys.place`; the displaced key is marked not
    /// admitted, keeps its counts on disk, and is returned to leave the index);
    /// an admitted key passes everything stored for it; the rest stay on disk.
    /// `last_seen` moves at most once a key a UTC day.
    private func admit(_ added: AggregateDelta, trusted: Set<SeriesKey>, newSources: [SeriesKey: (count: Int, trusted: Bool)],
                       now: Int64) throws -> (AggregateDelta, Int, [SeriesKey]) {
        let rules = admission()
        let register = try statement(Self.registerKey)
        let day = now / 86_400
        var pass: Set<SeriesKey> = []
        var candidates: [(SeriesKey, KeySupport)] = []
        for key in added.seriesKeys {
            let values = Self.keyValues(key)
            let fingerprint = key.fingerprint
            if indexed.contains(fingerprint) {
                pass.insert(key)
                let new = newSources[key]
                if indexed.report(fingerprint, newSources: new?.count ?? 0, trusted: trusted.contains(key) || new?.trusted == true, day: day) {
                    try statement(Self.touchKey).run([.int(now)] + values)
                }
                continue
            }
            try register.run(values + [.int(now)])
            var sources: Int64 = 0
            var hasTrusted = false
            try statement(Self.countKeySources).forEachRow(values) { row in
                sources = row.int(0)
                hasTrusted = row.int(1) != 0
            }
            hasTrusted = hasTrusted || trusted.contains(key)
            guard hasTrusted || sources >= Int64(rules.minSources) else { continue }
            candidates.append((key, KeySupport(trusted: hasTrusted, sources: Int(sources), lastSeenDay: day)))
        }
        let (newlyAdmitted, evicted) = indexed.place(candidates, capacity: rules.maxIndexedKeys)
        for key in evicted { try statement(Self.evictKey).run(Self.keyValues(key)) }
        for key in newlyAdmitted { try statement(Self.admitKey).run([.int(now)] + Self.keyValues(key)) }
        var delta = added.filter { pass.contains($0) }
        // Screens are counted per model, not per key: the index takes each commit's as they come.
        delta.screens = added.screens
        for key in newlyAdmitted {
            delta.merge(try readCounts(where: Self.oneKey, Self.keyValues(key)))
        }
        return (delta, newlyAdmitted.count, evicted)
    }

    private static let upsertLedger = """
        INSERT INTO vote_ledger(day, source, series, height_bin, network_group, reserve, votes) VALUES (?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT DO UPDATE SET votes = votes + excluded.votes
        """
    private static let upsertQuota = """
        INSERT INTO key_quota(day, source, created) VALUES (?, ?, ?)
        ON CONFLICT DO UPDATE SET created = created + excluded.created
        """

    /// Persists what the commit's new batches spent of their sources' daily budgets; the first
    /// commit of a UTC day deletes the earlier days' rows (the budgets start over each day).
    private func writeLedger(_ batches: [PendingBatch], stored: [Bool]) throws(SQLiteError) {
        let upsert = try statement(Self.upsertLedger)
        let quota = try statement(Self.upsertQuota)
        for (batch, isNew) in zip(batches, stored) where isNew && batch.source != .trusted {
            let day = batch.receivedAt / 86_400
            if day > ledgerDay {
                try statement("DELETE FROM vote_ledger WHERE day < ?").run([.int(day)])
                try statement("DELETE FROM key_quota WHERE day < ?").run([.int(day)])
                ledgerDay = day
            }
            for row in batch.ledger {
                try upsert.run([.int(day), .int(Int64(bitPattern: row.source.value)), .int(Int64(bitPattern: row.key)),
                                .int(Int64(row.halfPoints)), .int(Int64(bitPattern: row.group.value)), .int(row.reserve ? 1 : 0),
                                .int(row.votes)])
            }
            if batch.newKeys > 0 {
                try quota.run([.int(day), .int(Int64(bitPattern: batch.source.value)), .int(Int64(batch.newKeys))])
            }
        }
    }

    public func loadLedger(day: Int64) throws -> SourceLedger {
        var ledger = SourceLedger(day: day)
        guard try hasTable("vote_ledger") else { return ledger }
        try statement("""
            SELECT source, series, height_bin, network_group, reserve, votes FROM vote_ledger WHERE day = ?
            """).forEachRow([.int(day)]) { row in
            ledger.votes.append(LedgerIncrement(
                source: SourceID(UInt64(bitPattern: row.int(0))), group: SourceID(UInt64(bitPattern: row.int(3))),
                key: UInt64(bitPattern: row.int(1)), halfPoints: Int(row.int(2)), votes: row.int(5), reserve: row.int(4) != 0))
        }
        try statement("SELECT source, created FROM key_quota WHERE day = ?").forEachRow([.int(day)]) { row in
            ledger.newKeys[SourceID(UInt64(bitPattern: row.int(0))), default: 0] += Int(row.int(1))
        }
        return ledger
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

    /// Upserts every count of `delta`; `seenAt` (Unix seconds) is when its client networks reported
    /// their keys. Returns, per key, the sources `key_sources` took in (new distinct sources, and
    /// whether one is a trusted peer).
    @discardableResult
    func write(_ delta: AggregateDelta, seenAt: Int64) throws(SQLiteError) -> [SeriesKey: (count: Int, trusted: Bool)] {
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
        let touch = try statement(Self.touchKeySource)
        var newSources: [SeriesKey: (count: Int, trusted: Bool)] = [:]
        for (series, ids) in delta.sources {
            for id in ids {
                // Only a network's keyed hash has a last-seen time: trusted and retired rows never expire.
                try sources.run(Self.keyValues(series) + [.int(Int64(bitPattern: id.value)), id.isNetworkHash ? .int(seenAt) : .null])
                if db.changes == 1 {
                    newSources[series, default: (0, false)].count += 1
                    if id == .trusted { newSources[series, default: (0, false)].trusted = true }
                } else if id.isNetworkHash {
                    try touch.run([.int(seenAt), .int(seenAt)] + Self.keyValues(series) + [.int(Int64(bitPattern: id.value))])
                }
            }
        }
        if !delta.screens.isEmpty {
            let screens = try statement(Self.upsertModelScreens)
            for (key, count) in delta.screens {
                try screens.run([.text(key.model), .text(key.screen.description), .int(count)])
            }
        }
        return newSources
    }

    public func pruneUnconfirmedKeys(firstSeenBefore cutoff: Int64, limit: Int) throws -> [SeriesKey] {
        try db.execute("BEGIN IMMEDIATE;")
        do {
            var doomed: [SeriesKey] = []
            // Never confirmed: no trusted peer and fewer than min_sources networks (a confirmed
            // key that only waits for room in a full index is kept).
            let unconfirmed = """
                SELECT k.model, k.os_major, k.language, k.orientation, k.keyboard_type FROM keys k
                WHERE k.admitted_at IS NULL AND k.first_seen < ?
                AND (SELECT COUNT(*) + COALESCE(MAX(s.source = 0), 0) * 1000 FROM key_sources s
                     WHERE s.model = k.model AND s.os_major = k.os_major AND s.language = k.language
                     AND s.orientation = k.orientation AND s.keyboard_type = k.keyboard_type) < ?
                LIMIT ?
                """
            try statement(unconfirmed)
                .forEachRow([.int(cutoff), .int(Int64(admission().minSources)), .int(Int64(limit))]) { row in
                    if let key = Self.series(row) { doomed.append(key) }
                }
            for table in ["height_counts", "animation_counts", "cold_start_counts", "safe_area_counts", "height_votes",
                          "key_sources", "keys"] {
                let delete = try statement("DELETE FROM \(table) WHERE \(Self.oneKey)")
                for key in doomed { try delete.run(Self.keyValues(key)) }
            }
            try db.execute("COMMIT;")
            return doomed
        } catch {
            try? db.execute("ROLLBACK;")
            throw error
        }
    }

    public func retireSources(seenBefore cutoff: Int64) throws -> Int {
        try statement("""
            UPDATE key_sources SET source = \(Self.retiredSourceSQL), seen_at = NULL
            WHERE source > 0 AND COALESCE(seen_at, 0) < ?
            """).run([.int(cutoff)])
        return db.changes
    }

    public func pruneIdleKeys(lastSeenBefore cutoff: Int64, limit: Int) throws -> [SeriesKey] {
        try db.execute("BEGIN IMMEDIATE;")
        do {
            var doomed: [SeriesKey] = []
            let idle = """
                SELECT k.model, k.os_major, k.language, k.orientation, k.keyboard_type FROM keys k
                WHERE k.last_seen < ?
                AND NOT EXISTS (SELECT 1 FROM key_sources s
                     WHERE s.model = k.model AND s.os_major = k.os_major AND s.language = k.language
                     AND s.orientation = k.orientation AND s.keyboard_type = k.keyboard_type AND s.source = 0)
                LIMIT ?
                """
            try statement(idle).forEachRow([.int(cutoff), .int(Int64(limit))]) { row in
                if let key = Self.series(row) { doomed.append(key) }
            }
            for table in ["height_counts", "animation_counts", "cold_start_counts", "safe_area_counts", "height_votes",
                          "key_sources", "keys"] {
                let delete = try statement("DELETE FROM \(table) WHERE \(Self.oneKey)")
                for key in doomed { try delete.run(Self.keyValues(key)) }
            }
            try db.execute("COMMIT;")
            for key in doomed { indexed.remove(key) }
            return doomed
        } catch {
            try? db.execute("ROLLBACK;")
            throw error
        }
    }

    public func checkpointIfLarge(limit: Int64) -> Int64 {
        var info = stat()
        guard stat(path + "-wal", &info) == 0 else { return 0 }
        guard Int64(info.st_size) > limit else { return Int64(info.st_size) }
        // Never wait for readers here: a reader holding an old snapshot makes
        // the checkpoint busy, and the next commit tries again.
        sqlite3_busy_timeout(db.handle, 0)
        _ = try? db.execute("PRAGMA wal_checkpoint(TRUNCATE);")
        sqlite3_busy_timeout(db.handle, 5000)
        guard stat(path + "-wal", &info) == 0 else { return 0 }
        return Int64(info.st_size)
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
