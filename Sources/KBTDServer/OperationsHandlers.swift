import Foundation
import Hummingbird
import KBTDCore
import KBTDStore
import NIOPosix

/// `/healthz`, `/metrics`, `/v1/stats` (and `/dashboard`, beside). The last ones answer only local peers
/// (loopback, the Unix socket) unless the admin token is presented.
struct OperationsHandlers: Sendable {
    let writer: GroupCommitWriter
    let settings: SettingsBox
    let metrics: ServerMetrics
    let databasePath: String

    func health(_ request: Request, context: KBTDRequestContext) -> Response {
        let writable = access(databasePath, W_OK) == 0
        let lastError = writer.lastError
        let healthy = writable && lastError == nil
        var members: [(String, JSONOutput)] = [
            ("status", .string(healthy ? "ok" : "unavailable")),
            ("database", .string(databasePath)),
            ("queue_depth", .int(Int64(writer.queueDepth))),
        ]
        if !writable { members.append(("error", .string("database file is not writable"))) }
        if let lastError { members.append(("error", .string(lastError))) }
        let headers: HTTPFields = healthy ? [:] : [.retryAfter: String(settings.current.limits.retryAfterSeconds)]
        return JSONResponse.make(healthy ? .ok : .serviceUnavailable, .object(members), headers: headers)
    }

    func prometheus(_ request: Request, context: KBTDRequestContext) -> Response {
        if let denied = authorize(request, context) { return denied }
        metrics.queueDepth.set(Double(writer.queueDepth))
        metrics.queueCapacity.set(Double(writer.capacity))
        return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                        body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition())))
    }

    func stats(_ request: Request, context: KBTDRequestContext) async -> Response {
        if let denied = authorize(request, context) { return denied }
        let path = databasePath
        do {
            // SQLite blocks: read on NIO's thread pool, not the cooperative pool.
            let body = try await NIOThreadPool.singleton.runIfActive {
                let store = try SQLiteTelemetryStore(path: path, access: .readOnly)
                return StatsFormatter.json(StatsReport.rows(from: try store.loadCounts())).serialized()
            }
            return JSONResponse.bytes(.ok, Array(body.utf8))
        } catch {
            return JSONResponse.error(.serviceUnavailable, "unavailable", detail: "\(error)",
                                      retryAfter: settings.current.limits.retryAfterSeconds)
        }
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
