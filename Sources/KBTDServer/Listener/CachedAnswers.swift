import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import Prometheus

/// Which protocol a fast answer went out on: the label of `kbtd_fast_answers_total`.
enum FastAnswerProtocol: String, Sendable {
    case http1 = "http/1.1"
    case h2
}

/// The fast path for height answers, built with the app (`KBTDApp.answers`): what its two
/// handlers (`CachedAnswerBytesHandler` on an HTTP/1.1 connection's bytes, `CachedAnswerHandler`
/// on the HTTP parts of a connection or an h2 stream) need. The answers themselves are the
/// router's: the same `HeightRoutes.rendered` cache and framing, the same counts, plus the
/// `Date` header and `kbtd_fast_answers_total`.
struct CachedAnswers: Sendable {
    let routes: HeightRoutes
    let dates: HTTPDate
    let logger: Logger
    /// `kbtd_fast_answers_total` for HTTP/1.1 connections and for HTTP/2 streams.
    let fastHTTP1: Counter
    let fastHTTP2: Counter

    /// `limitBytes`: the rendered answers' bound when `routes` is made here (tests); nil: `answer_cache_bytes`.
    init(routes: HeightRoutes, dates: HTTPDate, logger: Logger, limitBytes: Int? = nil) {
        self.routes = limitBytes.map { HeightRoutes(heights: routes.heights, settings: routes.settings, metrics: routes.metrics,
                                                    limitBytes: $0) } ?? routes
        self.dates = dates
        self.logger = logger
        fastHTTP1 = routes.metrics.fastAnswers(protocol: FastAnswerProtocol.http1.rawValue)
        fastHTTP2 = routes.metrics.fastAnswers(protocol: FastAnswerProtocol.h2.rawValue)
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
    /// `kbtd_height_answers_total` as the route) and in `kbtd_fast_answers_total{protocol}`.
    func count(_ answer: RenderedAnswer, on fast: FastAnswerProtocol) {
        routes.count(answer)
        answer.requests.increment()
        (fast == .h2 ? fastHTTP2 : fastHTTP1).increment()
    }

    /// The whole HTTP/1.1 answer to `GET target` as bytes for the socket, counted; nil when the router must answer.
    func answer(target: String, ifNoneMatch: String?, allocator: ByteBufferAllocator) -> ByteBuffer? {
        guard let answer = answer(target: target, ifNoneMatch: ifNoneMatch) else { return nil }
        count(answer, on: .http1)
        return answer.http1(date: dates.now(), allocator: allocator)
    }
}
