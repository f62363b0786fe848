import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import Prometheus

/// The fast path for height answers, built with the app (`KBTDApp.answers`): what
/// `HTTP2FastAnswerHandler` (on an h2 connection's frames) needs. The answers themselves are the
/// router's: the same `HeightRoutes.rendered` cache and framing, the same counts, plus the
/// `Date` header and `kbtd_fast_answers_total{protocol="h2"}`.
struct CachedAnswers: Sendable {
    let routes: HeightRoutes
    let dates: HTTPDate
    let logger: Logger
    /// `kbtd_fast_answers_total{protocol="h2"}`.
    let fast: Counter

    /// `limitBytes`: the rendered answers' bound when `routes` is made here (tests); nil: `answer_cache_bytes`.
    init(routes: HeightRoutes, dates: HTTPDate, logger: Logger, limitBytes: Int? = nil) {
        self.routes = limitBytes.map { HeightRoutes(heights: routes.heights, settings: routes.settings, metrics: routes.metrics,
                                                    limitBytes: $0) } ?? routes
        self.dates = dates
        self.logger = logger
        fast = routes.metrics.fastAnswers(protocol: "h2")
    }

    /// Bytes the rendered answers hold now (keys, heads and bodies), at most `answer_cache_bytes`.
    var renderedBytes: Int { routes.answers.bytes }

    /// The answer to `GET target`, or nil when the router must answer: another
    /// path, a query the reply refuses (the router sends its 400), or the debug
    /// log recording every request (the router's request log does that).
    /// A question asked before (on any path) costs one lookup.
    func answer(target: String, ifNoneMatch: String?) -> RenderedAnswer? {
        guard logger.logLevel > .debug, target.hasPrefix("/v1/height") else { return nil }
        // The raw target is the key: the router keys an answer by its route and raw query, the
        // same text when the target's path is the route itself.
        if let hit = routes.rendered(key: target, ifNoneMatch: ifNoneMatch) { return hit }
        let uri = URI(target)
        guard HeightRoutes.paths.contains(uri.path) else { return nil }
        return try? routes.rendered(route: uri.path, key: target, ifNoneMatch: ifNoneMatch) { uri.queryParameters }
    }

    /// Counts a fast answer as the router's path would (`kbtd_http_requests_total` as `MetricsMiddleware`,
    /// `kbtd_height_answers_total` as the route) and in `kbtd_fast_answers_total{protocol="h2"}`.
    func count(_ answer: RenderedAnswer) {
        routes.count(answer)
        answer.requests.increment()
        fast.increment()
    }
}
