import HTTPTypes
import HummingbirdCore
import Logging

/// What the thin path for cached answers needs, shared by its two handlers
/// (`CachedAnswerBytesHandler` on a connection's bytes, `CachedAnswerHandler`
/// on its HTTP parts): the router's own `HeightRoutes.reply`, the `Date`
/// header, and the request counter `MetricsMiddleware` would bump.
struct CachedAnswers: Sendable {
    let routes: HeightRoutes
    let dates: HTTPDate
    let logger: Logger

    /// The answer to `GET target`, or nil when the router must answer: another
    /// path, a query the reply refuses (the router sends its 400), or the debug
    /// log recording every request (the router's request log does that).
    func reply(target: String, ifNoneMatch: String?) -> (route: String, reply: HeightRoutes.Reply)? {
        guard target.hasPrefix("/v1/height"), logger.logLevel > .debug else { return nil }
        let uri = URI(target)
        guard HeightRoutes.paths.contains(uri.path),
              let reply = try? routes.reply(path: uri.path, query: uri.queryParameters, ifNoneMatch: ifNoneMatch) else { return nil }
        return (uri.path, reply)
    }

    /// The answer's header fields as the router's path sends them (with its
    /// `Content-Length` and `Date`); counts the answer in `kbtd_http_requests_total`.
    func sending(_ reply: HeightRoutes.Reply, route: String) -> HTTPFields {
        var headers = reply.headers
        if let body = reply.body { headers[.contentLength] = String(body.count) }
        headers[.date] = dates.now()
        routes.metrics.request(route: route, status: reply.status.code)
        return headers
    }
}

/// Sent down the pipeline after each answer the bytes handler wrote, so
/// `RequestDeadlineHandler` starts the idle deadline as after any answer.
struct CachedAnswerSent {}
