import Foundation
import KBTDCore
import KBTDPostgres
import KBTDStore
import Logging

/// A kbtd node's side of a shared PostgreSQL database: the pool, the index it
/// starts from, the writer's store factory, and the catch-up with other
/// nodes' commits. (An SQLite file needs none of this.)
public final class PostgresNode: Sendable {
    let database: PostgresDatabase
    let marks = CommitLogMarks()
    let snapshot: IndexSnapshot
    let keys: [SeriesKey]
    /// Today's abuse budgets as every node has spent them so far.
    let ledger: SourceLedger
    let catchUpBound: Double

    private init(database: PostgresDatabase, snapshot: IndexSnapshot, keys: [SeriesKey], ledger: SourceLedger, catchUpBound: Double) {
        self.database = database
        self.snapshot = snapshot
        self.keys = keys
        self.ledger = ledger
        self.catchUpBound = catchUpBound
    }

    /// Connects (waiting up to `database_wait_seconds` for PostgreSQL), migrates
    /// under the advisory lock, and loads the index and the key registry.
    static func open(_ settings: ServerSettings, admission: @escaping @Sendable () -> IndexAdmission,
                     logger: Logger) async throws -> PostgresNode {
        var url: PostgresURL
        do {
            url = try PostgresURL(settings.database)
            try url.resolvePassword(passwordFile: settings.postgres.passwordFile)
        } catch {
            throw DatabaseUnreachable(description: "database: \(error.description)")
        }
        let database = PostgresDatabase(url: url, maxConnections: settings.postgres.poolSize, logger: logger)
        let deadline = ContinuousClock.now + .milliseconds(Int(settings.postgres.connectWaitSeconds * 1000))
        var announced = false
        while true {
            do {
                try await PostgresTelemetryStore.migrate(database)
                break
            } catch {
                let reason = PostgresDatabase.describe(error)
                if error is PostgresTelemetryStore.NewerSchema || error is PostgresSchema.RenamedStep || ContinuousClock.now >= deadline {
                    database.close()
                    throw DatabaseUnreachable(description: "cannot use the PostgreSQL database \(url): \(reason)")
                }
                if !announced {
                    logger.warning("waiting up to \(settings.postgres.connectWaitSeconds) s for PostgreSQL at \(url): \(reason)")
                    announced = true
                }
                try await Task.sleep(for: .seconds(1))
            }
        }
        let store = try await PostgresTelemetryStore(database: database, migrate: false, admission: admission)
        let snapshot = try await store.loadIndexSnapshot()
        var keys: [SeriesKey] = []
        try await store.forEachKey { keys.append($0) }
        let ledger = try await store.loadLedger(day: SourcePolicy.day(of: Date().timeIntervalSince1970))
        return PostgresNode(database: database, snapshot: snapshot, keys: keys, ledger: ledger,
                            catchUpBound: settings.postgres.indexCatchUpSeconds)
    }

    /// The catch-up that polls other nodes' commits into `apply` (the height index);
    /// `KBTDApp` runs it as a service (`IndexCatchUpService`) until its shutdown.
    func makeCatchUp(apply: @escaping @Sendable (AggregateDelta) -> Void,
                     absorb: @escaping @Sendable ([SourceLedger]) -> Void) -> IndexCatchUp {
        IndexCatchUp(database: database, marks: marks, snapshot: snapshot,
                     interval: .milliseconds(max(10, Int(catchUpBound * 500))), apply: apply, absorb: absorb)
    }
}

/// Start-up cannot reach PostgreSQL, or its database is not usable: kbtd exits
/// with this message (no password in it) and status 69.
public struct DatabaseUnreachable: Error, CustomStringConvertible {
    public var description: String
}

/// `database` as logs may show it: a PostgreSQL URL without its password.
public func loggableDatabase(_ database: String) -> String {
    guard PostgresURL.isURL(database) else { return database }
    return (try? PostgresURL(database).description) ?? "(an invalid PostgreSQL URL)"
}
