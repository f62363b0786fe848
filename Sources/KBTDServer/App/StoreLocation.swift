import Foundation
import KBTDCore
import KBTDPostgres
import KBTDStore
import Logging

/// Where the `database` setting points, and the one place a store is opened
/// from it: the app's writer (`writer`), the read-only endpoints (`reader`,
/// through a PostgreSQL node's pool) and the offline commands (`offlineReader`,
/// `kbtd stats`, `height`, `report`, ...), and a PostgreSQL node's side
/// (`node`: its pool, migration and start-up load, `PostgresNode`). A new kind
/// of store is added here.
///
///     let store = try StoreLocation(database: settings.database).offlineReader()
public enum StoreLocation: Sendable {
    /// An SQLite file.
    case sqlite(path: String)
    /// A shared PostgreSQL database (`postgres://` URL).
    case postgres(url: String)

    public init(database: String) {
        self = PostgresURL.isURL(database) ? .postgres(url: database) : .sqlite(path: database)
    }

    /// Why an offline reader could not be opened (the command line maps each to its exit code).
    public enum OpenFailure: Error {
        /// A PostgreSQL URL that does not parse, or whose password cannot be read.
        case badURL(String)
        /// No SQLite file at the path.
        case missing(path: String)
        /// The store exists but cannot be read: what to print (no password in it).
        case unreadable(String)
    }

    /// A PostgreSQL node's side (its pool, migrated schema and start-up load:
    /// `PostgresNode.open`, async, before `KBTDApp.init`), or nil for an SQLite file.
    public func node(_ settings: ServerSettings, logger: Logger) async throws -> PostgresNode? {
        guard case .postgres = self else { return nil }
        return try await PostgresNode.open(settings, admission: {
            IndexAdmission(minSources: settings.estimator.minSources, maxIndexedKeys: settings.maxIndexedKeys)
        }, logger: logger)
    }

    /// What the writer opens, and reopens after a failed commit: the SQLite
    /// file read-write (created and migrated: `sqliteWriter`), or a store on `node`'s pool.
    func writer(_ settings: ServerSettings, node: PostgresNode?,
                admission: @escaping @Sendable () -> IndexAdmission) -> @Sendable () async throws -> any TelemetryStore {
        switch self {
        case .postgres:
            guard let node else { preconditionFailure("a PostgreSQL store is opened through its node (PostgresNode.open)") }
            let database = node.database, marks = node.marks
            return { try await PostgresTelemetryStore(database: database, marks: marks, migrate: false, admission: admission) }
        case .sqlite(let path):
            return { try Self.sqliteWriter(path, settings, admission: admission) }
        }
    }

    /// The SQLite file read-write, created and migrated (blocking: the writer's
    /// thread, and `KBTDApp.init`, which loads the index from it at start-up). The writer's
    /// commits return once written and its sync thread fsyncs the log before answering
    /// (`WALDurability`): a 202 still follows the fsync of its commit.
    static func sqliteWriter(_ path: String, _ settings: ServerSettings,
                             admission: @escaping @Sendable () -> IndexAdmission) throws -> SQLiteTelemetryStore {
        try SQLiteTelemetryStore(path: path, fileMode: settings.databaseMode, walLimitBytes: settings.maxWALBytes, admission: admission,
                                 deferredSync: WALDurability.fdatasync)
    }

    /// A reader for `/v1/stats` and the dashboard: the SQLite file read-only
    /// (blocking: await it from `StoreThreads.readers`), or a reader on `node`'s pool.
    func reader(node: PostgresNode?) async throws -> any TelemetryReader {
        switch self {
        case .postgres:
            guard let node else { preconditionFailure("a PostgreSQL store is read through its node (PostgresNode.open)") }
            return try await PostgresTelemetryStore(database: node.database, migrate: false, forWriting: false)
        case .sqlite(let path):
            return try SQLiteTelemetryStore(path: path, access: .readOnly)
        }
    }

    /// A read-only store for a command-line tool: the SQLite file, never
    /// created or migrated, or a small pool of its own on PostgreSQL (never
    /// migrated; an hour per operation, for long reads).
    public func offlineReader() async throws(OpenFailure) -> any TelemetryReader {
        switch self {
        case .postgres(let text):
            var url: PostgresURL
            do {
                url = try PostgresURL(text)
                try url.resolvePassword()
            } catch {
                throw .badURL(error.description)
            }
            let database = PostgresDatabase(url: url, maxConnections: 2, operationTimeout: .seconds(3600), logger: Logger(label: "kbtd"))
            do {
                return try await PostgresTelemetryStore(database: database, migrate: false, forWriting: false)
            } catch {
                throw .unreadable("\(url): \(PostgresDatabase.describe(error))")
            }
        case .sqlite(let path):
            guard FileManager.default.fileExists(atPath: path) else { throw .missing(path: path) }
            do {
                return try SQLiteTelemetryStore(path: path, access: .readOnly)
            } catch {
                throw .unreadable("\(loggableDatabase(path)): \(error)")
            }
        }
    }
}
