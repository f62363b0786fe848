import CSQLite
#if canImport(Glibc)
import Glibc
#endif
import KBTDCore

/// `TelemetryStore` on SQLite: WAL, `synchronous=FULL` (or `NORMAL` with `WALDurability`, the
/// daemon's writer), one transaction per group commit; each counts table's rows in multi-row
/// upserts prepared once (`MultiRowUpsert`).
public final class SQLiteTelemetryStore: TelemetryStore, WALCheckpointing, DeferredDurability {
    /// Opening read-only (for `kbtd stats`) never creates or migrates.
    public enum Access: Sendable { case readWrite, readOnly }

    let db: SQLiteConnection
    private var statements: [String: SQLiteStatement] = [:]
    /// The multi-row upserts' statements, by `MultiRowUpsert.slot` and size (`upsertStatement`).
    var upsertStatements = [SQLiteStatement?](repeating: nil, count: MultiRowUpsert.slots * MultiRowUpsert.sizes)
    /// A commit's rows of one table, gathered for `run(_:_:)`; kept to reuse its buffers' capacity.
    var rows = SQLiteRows()
    public let path: String
    /// When keys join the in-memory index (read by each commit: reloadable).
    let admission: @Sendable () -> IndexAdmission
    /// Keys admitted to the index and their support: a cache of `keys.admitted_at` (the
    /// owner), read at open and written only with it, by the writer's task (ARCHITECTURE.md).
    var indexed = IndexedKeys()
    /// What `countWALFrames` counts into (kept alive here: SQLite holds only a pointer to it).
    private var walFrames: WALFrames?
    /// The log's checkpoints on a thread of their own, with `durability` (the daemon's writer).
    private(set) var checkpointer: WALCheckpointer?
    /// Set when commits return before their fsync (`synchronous=NORMAL`): what makes them
    /// durable, from the group-commit writer's sync thread. Nil: each commit syncs (`FULL`).
    public let durability: WALDurability?
    /// The last UTC day whose commit deleted earlier days' ledger rows.
    var ledgerDay: Int64 = -1
    /// The last UTC day (clock) whose upkeep pruned `day_votes` (two scans of the table: once a day).
    var dayVotesPrunedOn: Int64 = -1

    /// Opens (creating and migrating when read-write) the database at `path`.
    ///
    /// - Parameters:
    ///   - fileMode: permissions of a database file this call creates (the WAL
    ///     and shared-memory files inherit them); an existing file keeps its own.
    ///   - admission: when keys join the in-memory index.
    ///   - pageSize: the page size of a database this call creates (SQLite's 4,096 when nil; an
    ///     existing file keeps its own): for `kbtd-bench commit --page-size`.
    ///   - deferredSync: commit with `synchronous=NORMAL` and leave the log's fsync to the
    ///     caller through `durability` (which flushes with this function: `WALDurability.fdatasync`);
    ///     nil: every commit is durable when it returns (`synchronous=FULL`).
    /// - Throws: `UnusableDatabase` for a file kbtd must not or cannot use
    ///   (another application's, a newer schema, garbage, a directory, a
    ///   folder that does not exist or cannot be written); `SQLiteError` otherwise.
    public init(path: String, access: Access = .readWrite, fileMode: UInt32 = 0o600, walLimitBytes: Int64 = 64 << 20,
                admission: @escaping @Sendable () -> IndexAdmission = { IndexAdmission() }, pageSize: Int? = nil,
                deferredSync: (@Sendable (Int32) -> Int32)? = nil) throws {
        self.path = path
        self.admission = admission
        durability = access == .readWrite ? deferredSync.map { WALDurability(databasePath: path, flush: $0) } : nil
        if access == .readOnly {
            do {
                db = try Self.openReadOnly(path, mode: .readOnly)
            } catch {
                // No WAL index to share and no way to create one (read-only file system,
                // daemon stopped): read the file as it is.
                guard error.code != SQLITE_NOTADB else { throw error }
                db = try Self.openReadOnly(path, mode: .immutable)
            }
            // The readers ask for tables from version 2 on (later ones they do without).
            let version = try appliedVersion()
            guard version >= Schema.oldestReadableVersion else {
                throw UnusableDatabase.olderSchema(path: path, version: version, oldestReadable: Schema.oldestReadableVersion)
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
        // Before WAL mode: a WAL database's page size is fixed.
        if let pageSize { try db.execute("PRAGMA page_size = \(pageSize);") }
        try db.execute("""
            PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;
            PRAGMA journal_size_limit = \(walLimitBytes); PRAGMA temp_store = MEMORY;
            """)
        try migrate()
        // After the migrations, which created the log and synced it with its directory: from here
        // a commit returns once written, and the writer's sync thread makes it durable.
        if durability != nil {
            try db.execute("PRAGMA synchronous = NORMAL;")
            checkpointer = Self.checkpointInBackground(db)
        }
        try statement(Self.indexedSupport).forEachRow { row in
            if let key = Self.series(row) {
                indexed.load(key, sources: Int(row.int(6)), trusted: row.int(7) != 0, lastSeen: row.int(5))
            }
        }
    }

    deinit {
        if let checkpointer {
            sqlite3_wal_hook(db.handle, nil, nil)
            checkpointer.stop()
        }
    }

    /// Replaces SQLite's automatic checkpoint on the writer's connection with `WALCheckpointer`'s
    /// thread, which the connection's WAL hook asks after each commit; the hook itself runs the
    /// last checkpoint of a long log, after which the log starts over.
    private static func checkpointInBackground(_ db: SQLiteConnection) -> WALCheckpointer {
        let checkpointer = WALCheckpointer(databasePath: db.path)
        sqlite3_wal_hook(db.handle, { context, db, name, frames in
            let checkpointer = Unmanaged<WALCheckpointer>.fromOpaque(context!).takeUnretainedValue()
            if checkpointer.walCommitted(frames: Int(frames)) {
                var logged: Int32 = 0
                var copied: Int32 = 0
                // Passive: SQLITE_BUSY at once if the checkpoint thread is copying; the next commit tries again.
                if sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, &logged, &copied) == SQLITE_OK {
                    checkpointer.writerCopied(Int(copied))
                }
            }
            return SQLITE_OK
        }, Unmanaged.passUnretained(checkpointer).toOpaque())
        return checkpointer
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
        // SQLite resolves a statement's tables when it prepares it: ask for the table first, so a
        // file of another application reads as "not a kbtd database", not as SQLite's "no such table".
        var hasSchema = false
        try connection.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
            .forEachRow { _ in hasSchema = true }
        var version = 0
        if hasSchema {
            try connection.prepare("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").forEachRow { version = Int($0.int(0)) }
        }
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
        let pending: ArraySlice<Schema.Migration>
        do {
            pending = try Schema.migrator.pending(after: current)
        } catch {
            throw UnusableDatabase.newerSchema(path: path, version: error.version, supported: error.supported)
        }
        if current > 0 {
            var applied: [(version: Int, name: String)] = []
            try db.prepare("SELECT version, name FROM schema_migrations ORDER BY version").forEachRow {
                applied.append((Int($0.int(0)), $0.text(1)))
            }
            if let renamed = Schema.migrator.renamedStep(in: applied) {
                throw UnusableDatabase.notKbtd(path: path, why: "its schema version \(renamed.version) is \"\(renamed.recorded)\", "
                    + "where this kbtd's is \"\(renamed.known)\" (written by a development build whose migrations were renumbered)")
            }
        }
        for migration in pending {
            try db.inTransaction(.immediate) {
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
            }
        }
        if current == Schema.latestVersion {
            try db.execute("PRAGMA application_id = \(Schema.applicationID);")
        }
    }

    /// Statements this connection has run (`SQLITE_STMTSTATUS_RUN` summed over the cached
    /// statements) and rows changed (`sqlite3_total_changes`): what a commit costs, for `kbtd-bench commit`.
    package var statementRuns: (statements: Int, rowsChanged: Int) {
        var runs = 0
        for statement in statements.values { runs += Int(sqlite3_stmt_status(statement.handle, SQLITE_STMTSTATUS_RUN, 0)) }
        return (runs, Int(sqlite3_total_changes(db.handle)))
    }

    /// Counts the WAL frames this connection's commits write (`WALFrames.frames`; each a page and a
    /// 24-byte header), for `kbtd-bench commit`. It takes SQLite's WAL hook, so it checkpoints as
    /// SQLite's own auto-checkpoint does (a passive checkpoint once the WAL holds 1,000 frames).
    package func countWALFrames() throws(SQLiteError) -> WALFrames {
        var pageSize: Int64 = 0
        try statement("PRAGMA page_size").forEachRow { pageSize = $0.int(0) }
        let counter = WALFrames(pageSize: Int(pageSize))
        walFrames = counter
        sqlite3_wal_hook(db.handle, { context, db, name, frames in
            let counter = Unmanaged<WALFrames>.fromOpaque(context!).takeUnretainedValue()
            // Fewer frames than after the last commit: the WAL started over after a checkpoint.
            counter.frames += Int(frames) >= counter.last ? Int(frames) - counter.last : Int(frames)
            counter.last = Int(frames)
            if frames >= 1_000 { sqlite3_wal_checkpoint(db, name) }
            return SQLITE_OK
        }, Unmanaged.passUnretained(counter).toOpaque())
        return counter
    }

    func statement(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        if let cached = statements[sql] { return cached }
        let prepared = try db.prepare(sql)
        statements[sql] = prepared
        return prepared
    }
}

/// WAL frames written by a connection's commits (`SQLiteTelemetryStore.countWALFrames`).
package final class WALFrames {
    package let pageSize: Int
    package fileprivate(set) var frames = 0
    fileprivate var last = 0

    init(pageSize: Int) { self.pageSize = pageSize }

    /// The bytes those frames took in the WAL file.
    package var bytes: Int { frames * (pageSize + 24) }
}
