import Foundation
import KBTDCore
import KBTDStore
import Logging
import PostgresNIO
import Synchronization

/// `commit_log` ids whose deltas this node's index already has (its own
/// commits, and what the catch-up applied). Shared by the writer's store and
/// `IndexCatchUp`; an id is marked before its transaction commits, so the
/// catch-up never applies a node's own commit a second time.
public final class CommitLogMarks: Sendable {
    private let ids = Mutex<Set<Int64>>([])

    public init() {}

    func mark(_ id: Int64) { ids.withLock { _ = $0.insert(id) } }
    /// True when `id` was not marked yet (and marks it).
    func claim(_ id: Int64) -> Bool { ids.withLock { $0.insert(id).inserted } }
    /// Forgets ids the catch-up will never read again.
    func forget(_ gone: [Int64]) { ids.withLock { $0.subtract(gone) } }
    var count: Int { ids.withLock { $0.count } }
}

/// `TelemetryStore` on a shared PostgreSQL database, for several stateless
/// kbtd nodes. One transaction per group commit (`synchronous_commit = on`,
/// so the 202 follows a durable COMMIT): the batch ids are claimed with
/// `INSERT ... ON CONFLICT DO NOTHING` in the same transaction as the count
/// upserts (`count = count + excluded.count`), so a retry that reaches another
/// node is a duplicate and nothing is counted twice. Keys are written in one
/// fixed order, table by table, so concurrent nodes do not deadlock; a
/// deadlock or serialization failure is retried whole anyway.
///
/// Every method awaits postgres-nio's pool (`PostgresDatabase`): no thread
/// waits for the database.
public final class PostgresTelemetryStore: TelemetryStore {
    public let database: PostgresDatabase
    /// This node's name in `commit_log` (host and pid).
    let node: String
    let marks: CommitLogMarks
    let admission: @Sendable () -> IndexAdmission
    /// Keys known to be admitted and their support: a cache of `keys.admitted_at` (the owner;
    /// the registry row decides under its lock), read at open and written once a commit or
    /// pruning that wrote the column succeeded, by the writer's task (ARCHITECTURE.md). Its
    /// `IndexedKeys` decides admission and displacement as the SQLite store's does.
    var indexed = IndexedKeys()
    /// The last UTC day (clock) whose upkeep pruned `day_votes` (two scans of the table: once a day).
    var dayVotesPrunedOn: Int64 = -1

    /// Opens the store on `database` (migrating it when `migrate`), loading
    /// which keys are admitted.
    ///
    /// - Parameter forWriting: false for a reader (`kbtd stats`, `/v1/stats`): skips loading the admitted keys.
    public init(database: PostgresDatabase, marks: CommitLogMarks = CommitLogMarks(), node: String? = nil,
                migrate: Bool = true, forWriting: Bool = true,
                admission: @escaping @Sendable () -> IndexAdmission = { IndexAdmission() }) async throws {
        self.database = database
        self.marks = marks
        self.node = node ?? Self.defaultNodeName()
        self.admission = admission
        if migrate {
            try await PostgresSchema.migrate(database)
        } else {
            let version = try await PostgresSchema.appliedVersion(database)
            guard version > 0 else { throw PostgresDatabase.Failure(description: "not a kbtd database (no schema): \(database.url)") }
            guard version <= PostgresSchema.latestVersion else { throw PostgresSchema.NewerSchema(version: version) }
        }
        guard forWriting else { return }
        indexed = try await database.withConnection { connection in
            var keys = IndexedKeys()
            for try await row in try await connection.query(PostgresSQL.indexedSupport, logger: database.logger) {
                guard let key = try Self.series(row) else { continue }
                let (_, _, _, _, _, lastSeen, sources, trusted) = try row.decode((String, Int, String, String, String, Int, Int, Bool?).self)
                keys.load(key, sources: sources, trusted: trusted ?? false, lastSeen: Int64(lastSeen))
            }
            return keys
        }
    }

    /// Creates or updates the schema (ordered migrations under an advisory lock).
    public static func migrate(_ database: PostgresDatabase) async throws {
        try await PostgresSchema.migrate(database)
    }

    public typealias NewerSchema = PostgresSchema.NewerSchema

    static func defaultNodeName() -> String {
        "\(ProcessInfo.processInfo.hostName):\(getpid())"
    }
}
