import Foundation
import Hummingbird
import KBTDCore
import KBTDPostgres
import KBTDStore
import NIOPosix

/// `/healthz`, `/metrics`, `/v1/stats` (and `/dashboard`, beside). The last ones answer only local peers
/// (loopback, the Unix socket) unless the admin token is presented.
struct OperationsHandlers: Sendable {
    let writer: GroupCommitWriter
    let settings: SettingsBox
    let metrics: ServerMetrics
    let databasePath: String
    /// Brings the gauges `/metrics` shows up to date.
    let refreshGauges: @Sendable () -> Void
    /// Set when the database is PostgreSQL (see OperationsHandlers+Postgres.swift).
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

    func prometheus(_ request: Request, context: KBTDRequestContext) -> Response {
        if let denied = authorize(request, context) { return denied }
        metrics.queueDepth.set(Double(writer.queueDepth))
        refreshGauges()
        metrics.queueCapacity.set(Double(writer.capacity))
        return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                        body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition() + postgresExposition())))
    }

    /// Most rows one `/v1/stats` answer holds (`limit`, default 1,000); `next`
    /// in the answer is the `after` cursor of the following page.
    static let maxStatsRows = 10_000

    func stats(_ request: Request, context: KBTDRequestContext) async -> Response {
        if let denied = authorize(request, context) { return denied }
        let parameters = request.uri.queryParameters
        var limit = 1_000
        if let text = parameters["limit"] {
            guard let value = Int(text), (1...Self.maxStatsRows).contains(value) else {
                return JSONResponse.error(.badRequest, "invalid query", detail: "limit: must be an integer in 1...\(Self.maxStatsRows)",
                                          field: "limit")
            }
            limit = value
        }
        var after: SeriesKey?
        if let text = parameters["after"] {
            guard let cursor = Self.cursor(String(text)) else {
                return JSONResponse.error(.badRequest, "invalid query", detail: "after: must be the next value of a previous answer",
                                          field: "after")
            }
            after = cursor
        }
        var osMajor: Int?
        if let os = parameters["os"] {
            guard let major = BatchValidator.osMajor(String(os)) else {
                return JSONResponse.error(.badRequest, "invalid query", detail: "os: must be a dotted version like 26.1", field: "os")
            }
            osMajor = major
        }
        let filter = StatsFilter(model: parameters["model"].map(String.init), language: parameters["language"].map(String.init),
                                 osMajor: osMajor)
        let openReader = readerFactory
        let (cursor, pageLimit) = (after, limit)
        do {
            // SQLite blocks: read on NIO's thread pool, not the cooperative pool.
            let body = try await NIOThreadPool.singleton.runIfActive {
                let store = try openReader()
                let totals = try store.statsTotals(filter)
                var rows: [StatsRow] = []
                let next = try store.forEachPage(filter, after: cursor, pageSize: 5_000, maxKeys: pageLimit) { counts in
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
            return JSONResponse.error(.serviceUnavailable, "unavailable", detail: "the database cannot be read; see the daemon's log",
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
        guard parts.count == 5, BatchValidator.modelProblem(parts[0]) == nil,
              (1...4).contains(parts[1].utf8.count), parts[1].utf8.allSatisfy({ (0x30...0x39).contains($0) }),
              let major = Int(parts[1]), BatchValidator.languageProblem(parts[2]) == nil,
              let orientation = Orientation(rawValue: parts[3]), KeyboardTypes.all.contains(parts[4]) else { return nil }
        return SeriesKey(model: parts[0], osMajor: major, language: parts[2], orientation: orientation, keyboardType: parts[4])
    }

    func authorize(_ request: Request, _ context: KBTDRequestContext) -> Response? {
        if context.isLocalPeer { return nil }
        if let token = settings.current.adminToken, bearerMatches(request, anyOf: [token]) { return nil }
        return JSONResponse.error(.forbidden, "forbidden",
                                  detail: "this endpoint answers only on loopback and the Unix socket, or with the admin token")
    }
}

/// Whether `Authorization: Bearer X` carries one of `tokens` (the scheme is
/// case-insensitive, RFC 7235). Every token is compared in constant time.
func bearerMatches(_ request: Request, anyOf tokens: [String]) -> Bool {
    guard let header = request.headers[.authorization], header.count > 7,
          header.prefix(7).lowercased() == "bearer " else { return false }
    let presented = Array(header.utf8.dropFirst(7))
    var match = false
    for token in tokens where constantTimeEqual(presented, Array(token.utf8)) { match = true }
    return match
}

/// Compares secrets without an early exit, so timing does not leak a prefix.
func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    var difference = UInt8(a.count == b.count ? 0 : 1)
    for i in 0..<max(a.count, b.count) {
        difference |= (i < a.count ? a[i] : 0) ^ (i < b.count ? b[i] : 0)
    }
    return difference == 0
}
