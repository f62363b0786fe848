import Foundation
import Hummingbird
import KBTDCore
import KBTDPostgres
import KBTDStore

/// What `/healthz`, `/metrics`, `/v1/stats` and `/dashboard` add or read
/// differently when the store is PostgreSQL.
extension OperationsRoutes {
    /// Sets the PostgreSQL parts (nil for an SQLite file: nothing changes).
    func on(postgres: PostgresNode?, catchUp: IndexCatchUp?) -> OperationsRoutes {
        var copy = self
        copy.postgres = postgres
        copy.catchUp = catchUp
        return copy
    }

    /// Opens a reader of the store (SQLite's blocks: await it from `StoreThreads.readers`).
    var readerFactory: @Sendable () async throws -> any TelemetryReader {
        let (location, node) = (StoreLocation(database: databasePath), postgres)
        return { try await location.reader(node: node) }
    }

    /// 200 while the last commit and the last pool operation succeeded and the
    /// index's lag is within twice its bound; else 503 with `Retry-After`.
    /// No URL and no server message in the body (the log has them).
    func postgresHealth(_ postgres: PostgresNode) -> Response {
        let pool = postgres.database.poolState
        let faults = postgresFaults(postgres)
        let healthy = !faults.store && !faults.index
        var members: [(String, JSONOutput)] = [
            ("status", .string(healthy ? "ok" : "unavailable")),
            ("queue_depth", .int(Int64(writer.queueDepth))),
            ("store", .string("postgresql")),
            ("pool", .object([("leased", .int(Int64(pool.leased))), ("size", .int(Int64(settings.current.postgres.poolSize)))])),
            ("index_lag_seconds", .double((faults.lag * 1000).rounded() / 1000)),
        ]
        if faults.store {
            members.append(("error", .string("the database is unavailable")))
        } else if faults.index {
            members.append(("error", .string("the index is not catching up with other nodes")))
        }
        let headers: HTTPFields = healthy ? [:] : [.retryAfter: String(settings.current.limits.retryAfterSeconds)]
        return JSONResponse.make(healthy ? .ok : .serviceUnavailable, .object(members), headers: headers)
    }

    /// The two ways a PostgreSQL node is unwell: the last commit or pool operation failed
    /// (`store`), or its index lags other nodes' commits past twice its bound (`index`).
    func postgresFaults(_ postgres: PostgresNode) -> (store: Bool, index: Bool, lag: Double) {
        let lag = catchUp?.lagSeconds ?? 0
        return (writer.lastError != nil || postgres.database.poolState.lastError != nil,
                catchUp?.lastError != nil || lag > max(2 * postgres.catchUpBound, 2), lag)
    }

    /// Why this node should not be sent traffic, on PostgreSQL (nil: ready; `postgresFaults`).
    func postgresUnreadiness(_ postgres: PostgresNode) -> String? {
        let faults = postgresFaults(postgres)
        if faults.store { return "database not writable: the database is unavailable" }
        if faults.index { return "index loading: behind other nodes' commits" }
        return nil
    }

    /// Sets the pool's and the catch-up's gauges (`StoreMetrics`; nothing on SQLite).
    func refreshPostgresGauges() {
        guard let postgres, let gauges = metrics.store.postgres else { return }
        let pool = postgres.database.poolState
        gauges.poolLeased.set(Int64(pool.leased))
        gauges.poolSize.set(Int64(settings.current.postgres.poolSize))
        gauges.up.set(Int64(pool.lastError == nil ? 1 : 0))
        if let catchUp { gauges.indexLag.set(catchUp.lagSeconds) }
    }
}
