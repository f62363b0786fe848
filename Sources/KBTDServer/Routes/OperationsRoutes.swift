import Foundation
import Hummingbird
import KBTDCore
import KBTDPostgres
import KBTDReport
import KBTDStore

/// `/healthz`, `/metrics` and `/v1/stats` (`/dashboard` is beside). The last
/// two sit behind `AdminAccessMiddleware`.
struct OperationsRoutes: Sendable {
    let writer: GroupCommitWriter
    let settings: SettingsBox
    let metrics: ServerMetrics
    let databasePath: String
    let readiness: Readiness
    /// Brings the gauges `/metrics` shows up to date.
    let refreshGauges: @Sendable () -> Void
    /// Set when the database is PostgreSQL (see OperationsRoutes+Postgres.swift).
    var postgres: PostgresNode? = nil
    var catchUp: IndexCatchUp? = nil

    func health(_ request: Request, context: KBTDRequestContext) -> Response {
        if let postgres { return postgresHealth(postgres) }
        let writable = access(databasePath, W_OK) == 0
        let lastError = writer.lastError
        let healthy = writable && lastError == nil
        // No path and no SQLite text: /healthz answers anyone. The log has the details.
        var members: [(String, JSONOutput)] = [
            ("status", .string(healthy ? "ok" : "unavailable")),
            ("queue_depth", .int(Int64(writer.queueDepth))),
        ]
        if !writable {
            members.append(("error", .string("the database file is not writable")))
        } else if lastError != nil {
            members.append(("error", .string("the database is unavailable")))
        }
        let headers: HTTPFields = healthy ? [:] : [.retryAfter: String(settings.current.limits.retryAfterSeconds)]
        return JSONResponse.make(healthy ? .ok : .serviceUnavailable, .object(members), headers: headers)
    }

    /// `/readyz`: 200 `{"status":"ready"}` while this node should be sent traffic; else 503 with
    /// `Retry-After` and the reason in `error`. The index is loaded before the listeners bind, so
    /// what is left to check is a graceful shutdown under way and the store (`/healthz`'s checks).
    func ready(_ request: Request, context: KBTDRequestContext) -> Response {
        let reason: String?
        if readiness.isShuttingDown {
            reason = "shutting down"
        } else if let postgres {
            reason = postgresUnreadiness(postgres)
        } else if access(databasePath, W_OK) != 0 {
            reason = "database not writable: the database file is not writable"
        } else if writer.lastError != nil {
            reason = "database not writable: the last commit failed"
        } else {
            reason = nil
        }
        guard let reason else { return JSONResponse.make(.ok, .object([("status", .string("ready"))])) }
        let retryAfter = settings.current.limits.retryAfterSeconds
        return JSONResponse.make(.serviceUnavailable, .object([("status", .string("not ready")), ("error", .string(reason))]),
                                 headers: [.retryAfter: String(retryAfter)])
    }

    func prometheus(_ request: Request, context: KBTDRequestContext) -> Response {
        metrics.queueDepth.set(Double(writer.queueDepth))
        refreshGauges()
        metrics.queueCapacity.set(Double(writer.capacity))
        refreshPostgresGauges()
        return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                        body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition())))
    }

    /// Most rows one `/v1/stats` answer holds (`limit`, default 1,000); `next`
    /// in the answer is the `after` cursor of the following page.
    static let maxStatsRows = 10_000

    func stats(_ request: Request, context: KBTDRequestContext) async throws(JSONRefusal) -> Response {
        let parameters = request.uri.queryParameters
        let filter: StatsFilter, after: SeriesKey?, limit: Int
        do throws(FieldError) {
            limit = try parameters["limit"].map { text throws(FieldError) in
                guard let value = Int(text), (1...Self.maxStatsRows).contains(value) else {
                    throw FieldError(field: "limit", reason: "must be an integer in 1...\(Self.maxStatsRows)")
                }
                return value
            } ?? 1_000
            after = try parameters["after"].map { text throws(FieldError) in
                guard let cursor = Self.cursor(String(text)) else {
                    throw FieldError(field: "after", reason: "must be the next value of a previous answer")
                }
                return cursor
            }
            let osMajor = try parameters["os"].map { text throws(FieldError) in try HeightQuery.osMajor(String(text)) }
            filter = StatsFilter(model: parameters["model"].map(String.init), language: parameters["language"].map(String.init),
                                 osMajor: osMajor)
        } catch {
            throw JSONRefusal(error, "invalid query")
        }
        let openReader = readerFactory
        let (cursor, pageLimit) = (after, limit)
        do {
            // SQLite blocks: read on the store's reader threads, not the cooperative pool.
            let body = try await withTaskExecutorPreference(StoreThreads.readers) {
                let store = try await openReader()
                let totals = try await store.statsTotals(filter)
                var rows: [StatsRow] = []
                let next = try await store.forEachPage(filter, after: cursor, pageSize: 5_000, maxKeys: pageLimit) { counts in
                    rows += StatsReport.rows(from: counts, filter: filter)
                }
                guard case .object(var members) = StatsFormatter.json(rows) else { return "" }
                members[0] = ("keys", .int(totals.keys))
                members[1] = ("samples", .int(totals.samples))
                if let next { members.append(("next", .string(Self.cursor(next)))) }
                return JSONOutput.object(members).serialized()
            }
            return JSONResponse.bytes(.ok, Array(body.utf8))
        } catch {
            context.logger.error("stats: cannot read \(loggableDatabase(databasePath)): \(error)")
            throw JSONRefusal(status: .serviceUnavailable, error: "unavailable", detail: "the database cannot be read; see the daemon's log",
                              retryAfter: settings.current.limits.retryAfterSeconds)
        }
    }

    /// A page cursor: the last key's fields joined by `|` (none of them may contain one).
    static func cursor(_ key: SeriesKey) -> String {
        [key.model, String(key.osMajor), key.language, key.orientation.rawValue, key.keyboardType].joined(separator: "|")
    }

    /// Parses a cursor, with the same rules as ingest for each field (openapi.yaml has the pattern).
    static func cursor(_ text: String) -> SeriesKey? {
        let parts = text.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 5, FieldRules.modelProblem(parts[0]) == nil,
              (1...4).contains(parts[1].utf8.count), parts[1].utf8.allSatisfy({ (0x30...0x39).contains($0) }),
              let major = Int(parts[1]), FieldRules.languageProblem(parts[2]) == nil,
              let orientation = Orientation(rawValue: parts[3]), KeyboardTypes.all.contains(parts[4]) else { return nil }
        return SeriesKey(model: parts[0], osMajor: major, language: parts[2], orientation: orientation, keyboardType: parts[4])
    }
}
