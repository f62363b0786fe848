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

    /// Opens a reader of the store (blocking: call on NIO's thread pool).
    var readerFactory: @Sendable () throws -> any TelemetryReader {
        if let postgres { return { try postgres.reader() } }
        let path = databasePath
        return { try SQLiteTelemetryStore(path: path, access: .readOnly) }
    }

    /// 200 while the last commit and the last pool operation succeeded and the
    /// index's lag is within twice its bound; else 503 with `Retry-After`.
    /// No URL and no server message in the body (the log has them).
    func postgresHealth(_ postgres: PostgresNode) -> Response {
        let pool = postgres.database.poolState
        let lag = catchUp?.lagSeconds ?? 0
        let writerError = writer.lastError
        let lagging = lag > max(2 * postgres.catchUpBound, 2)
        let healthy = writerError == nil && pool.lastError == nil && catchUp?.lastError == nil && !lagging
        var members: [(String, JSONOutput)] = [
            ("status", .string(healthy ? "ok" : "unavailable")),
            ("queue_depth", .int(Int64(writer.queueDepth))),
            ("store", .string("postgresql")),
            ("pool", .object([("leased", .int(Int64(pool.leased))), ("size", .int(Int64(settings.current.postgres.poolSize)))])),
            ("index_lag_seconds", .double((lag * 1000).rounded() / 1000)),
        ]
        if writerError != nil || pool.lastError != nil {
            members.append(("error", .string("the database is unavailable")))
        } else if catchUp?.lastError != nil || lagging {
            members.append(("error", .string("the index is not catching up with other nodes")))
        }
        let headers: HTTPFields = healthy ? [:] : [.retryAfter: String(settings.current.limits.retryAfterSeconds)]
        return JSONResponse.make(healthy ? .ok : .serviceUnavailable, .object(members), headers: headers)
    }

    /// Prometheus lines for the store kind, the pool and the index's catch-up.
    func postgresExposition() -> [UInt8] {
        guard let postgres else { return Array("# TYPE kbtd_store_info gauge\nkbtd_store_info{kind=\"sqlite\"} 1\n".utf8) }
        let pool = postgres.database.poolState
        var text = """
            # HELP kbtd_store_info The store kind (sqlite or postgresql).
            # TYPE kbtd_store_info gauge
            kbtd_store_info{kind="postgresql"} 1
            # HELP kbtd_postgres_pool_leased_connections Pool connections in use.
            # TYPE kbtd_postgres_pool_leased_connections gauge
            kbtd_postgres_pool_leased_connections \(pool.leased)
            # HELP kbtd_postgres_pool_size Most connections the pool opens.
            # TYPE kbtd_postgres_pool_size gauge
            kbtd_postgres_pool_size \(settings.current.postgres.poolSize)
            # HELP kbtd_postgres_up 1 when the last pool operation succeeded.
            # TYPE kbtd_postgres_up gauge
            kbtd_postgres_up \(pool.lastError == nil ? 1 : 0)

            """
        if let catchUp {
            text += """
                # HELP kbtd_index_lag_seconds Seconds since the last successful read of other nodes' commits.
                # TYPE kbtd_index_lag_seconds gauge
                kbtd_index_lag_seconds \(catchUp.lagSeconds)
                # HELP kbtd_index_catch_up_commits_total Other nodes' commits applied to this node's index.
                # TYPE kbtd_index_catch_up_commits_total counter
                kbtd_index_catch_up_commits_total \(catchUp.appliedCommits)

                """
        }
        return Array(text.utf8)
    }
}
