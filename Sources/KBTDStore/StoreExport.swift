import CSQLite
import KBTDCore

/// A remembered batch id (the `batches` table): what `kbtd migrate` carries over
/// so that a retry after the move is still a duplicate.
public struct StoredBatchID: Sendable, Equatable {
    public var batchID: String
    public var receivedAt: Int64
    public var model: String
    public var os: String
    public var accepted: Int
    public var rejected: Int

    public init(batchID: String, receivedAt: Int64, model: String, os: String, accepted: Int, rejected: Int) {
        self.batchID = batchID
        self.receivedAt = receivedAt
        self.model = model
        self.os = os
        self.accepted = accepted
        self.rejected = rejected
    }
}

/// A key registry row (the `keys` table).
public struct StoredKey: Sendable, Equatable {
    public var key: SeriesKey
    public var firstSeen: Int64
    public var admittedAt: Int64?

    public init(key: SeriesKey, firstSeen: Int64, admittedAt: Int64?) {
        self.key = key
        self.firstSeen = firstSeen
        self.admittedAt = admittedAt
    }
}

/// Reading every row of an SQLite database out, for `kbtd migrate`.
extension SQLiteTelemetryStore {
    /// When the database was created (schema version 1's `applied_at`, Unix
    /// seconds): with the file's path, how `kbtd migrate` recognises an import it already made.
    public func creationTime() throws -> Int64 {
        var created: Int64 = 0
        try statement("SELECT applied_at FROM schema_migrations WHERE version = 1").forEachRow { created = $0.int(0) }
        return created
    }

    /// The counts `kbtd migrate` carries over: every count, with the sources of a database
    /// from before keyed sources (an unkeyed address hash each) retired on the way out.
    public func countsForImport() throws -> AggregateDelta {
        var counts = try loadCounts()
        var version = 0
        try statement("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").forEachRow { version = Int($0.int(0)) }
        if version < Schema.keyedSourcesVersion { counts.retireSources() }
        return counts
    }

    /// Hands every remembered batch id to `body`, `chunk` at a time.
    public func forEachBatchIDs(chunk: Int = 10_000, _ body: ([StoredBatchID]) throws -> Void) throws {
        var rows: [StoredBatchID] = []
        var failure: (any Error)?
        try statement("SELECT batch_id, received_at, model, os, accepted, rejected FROM batches ORDER BY batch_id").forEachRow { row in
            guard failure == nil else { return }
            rows.append(StoredBatchID(batchID: row.text(0), receivedAt: row.int(1), model: row.text(2), os: row.text(3),
                                      accepted: Int(row.int(4)), rejected: Int(row.int(5))))
            if rows.count == chunk {
                do { try body(rows) } catch { failure = error }
                rows.removeAll(keepingCapacity: true)
            }
        }
        if let failure { throw failure }
        if !rows.isEmpty { try body(rows) }
    }

    /// Every key registry row.
    public func storedKeys() throws -> [StoredKey] {
        guard try hasTable("keys") else { return [] }
        var keys: [StoredKey] = []
        try statement("SELECT model, os_major, language, orientation, keyboard_type, first_seen, admitted_at FROM keys").forEachRow { row in
            guard let key = Self.series(row) else { return }
            let admitted: Int64? = sqlite3_column_type(row.statement, 6) == SQLITE_NULL ? nil : row.int(6)
            keys.append(StoredKey(key: key, firstSeen: row.int(5), admittedAt: admitted))
        }
        return keys
    }
}
