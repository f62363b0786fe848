import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import Prometheus

/// The HTTP front: what a request must satisfy and what every answer carries, written once, built
/// with the app (`KBTDApp.front`). Every path that answers a request asks it: the router's
/// responder (HTTP/1.1 connections and the h2 streams the frame front leaves, through
/// Hummingbird's router and the middlewares), `HTTP1FastAnswerHandler` (cached heights on HTTP/1.1,
/// and what NIO's parser refused), and the adapter on an h2 connection's frames, `HTTP2FrameFront`
/// (cached heights and `POST /v1/batches`), which `Benchmarks/session` keeps: without it the phone's
/// session costs 17% (heights) and 12% (batches) more CPU (BENCHMARKS.md).
///
/// | rule | where it is written |
/// |---|---|
/// | method, path, headers a frame path may take (else the router answers) | `heightAnswer`, `takesBatch` |
/// | rate limit, then the ingest token | `admitBatch` (the middlewares' own `refusal`s, which the router runs) |
/// | media type, encoding, wire and inflated caps, the shared body budget | `batchBody` (`BatchBody`, `Limits/BodyBudget`) |
/// | status, fields, body, refusal bodies | `HeightRoutes.rendered`, `IngestRoute` (`JSONAnswer`, `JSONRefusal`) |
/// | `Date` | `date()` |
/// | request metrics | `MetricsMiddleware` on the router, `sent(_:)` for every other answer |
/// | deadlines: TLS handshake, head, body, idle, an h2 answer's wait for the window | `RequestDeadlines` (lengths, when each starts) |
/// | keeping them, one timer a connection | `HTTP1FastAnswerHandler` (HTTP/1.1), `RequestDeadlineHandler` (router streams), `HTTP2FrameFront`, `ListenerChannel` |
/// | idle h2 connection (no stream open) | `RequestDeadlines.idle`, kept by `NIOHTTP2ServerConnectionManagementHandler` |
struct Front: Sendable {
    let heights: HeightRoutes
    let ingest: IngestRoute
    let rateLimit: RateLimitMiddleware
    let auth: IngestAuthMiddleware
    let logger: Logger
    private let dates = HTTPDate()
    /// `kbtd_fast_answers_total{protocol="h2"}` and `{protocol="http/1.1"}`, `kbtd_fast_batches_total{protocol="h2"}`.
    private let fastAnswers: Counter
    private let fastAnswersHTTP1: Counter
    private let fastBatches: Counter

    init(heights: HeightRoutes, ingest: IngestRoute, rateLimit: RateLimitMiddleware, auth: IngestAuthMiddleware, logger: Logger) {
        self.heights = heights
        self.ingest = ingest
        self.rateLimit = rateLimit
        self.auth = auth
        self.logger = logger
        fastAnswers = heights.metrics.fastAnswers(protocol: "h2")
        fastAnswersHTTP1 = heights.metrics.fastAnswers(protocol: "http/1.1")
        fastBatches = heights.metrics.fastBatches(protocol: "h2")
    }

    var settings: SettingsBox { heights.settings }
    var metrics: ServerMetrics { heights.metrics }

    /// The `Date` every answer carries (formatted once a second).
    func date() -> String { dates.now() }

    /// While the debug log records requests, the router (its request log) answers every one.
    private var routerOnly: Bool { logger.logLevel <= .debug }

    // MARK: Heights

    /// The answer to a height question a frame path may send itself: a `GET` of `/v1/height` or
    /// `/v1/heights` with no body and at most one `If-None-Match`, whose query the route accepts.
    /// nil: the router answers (another path or method, `HEAD` included, a body, a refused query
    /// and its 400). A question asked before, on any path, costs one lookup.
    func heightAnswer(method: String?, target: String?, ifNoneMatch: String?, repeatedIfNoneMatch: Bool,
                      hasBody: Bool) -> RenderedAnswer? {
        guard !routerOnly, method == "GET", !hasBody, !repeatedIfNoneMatch, let target else { return nil }
        return answer(target: target, ifNoneMatch: ifNoneMatch)
    }

    /// `heightAnswer` for a request head as NIO's parser read it (its target as sent): HTTP/1.0, or a
    /// `Connection` header (`close`, an upgrade), goes to the router, which ends the connection after its answer.
    func heightAnswer(_ head: HTTPRequestHead) -> RenderedAnswer? {
        let fields = head.headers
        guard head.version == .http1_1, !fields.contains(name: "Connection") else { return nil }
        let ifNoneMatch = fields["If-None-Match"]
        return heightAnswer(method: head.method.rawValue, target: head.uri, ifNoneMatch: ifNoneMatch.first,
                            repeatedIfNoneMatch: ifNoneMatch.count > 1,
                            hasBody: fields.contains(name: "Content-Length") || fields.contains(name: "Transfer-Encoding"))
    }

    /// The rendered answer to `GET target` (the router's cache and framing), or nil when the
    /// router must answer.
    func answer(target: String, ifNoneMatch: String?) -> RenderedAnswer? {
        guard target.hasPrefix("/v1/height") else { return nil }
        // The raw target is the key: the router keys an answer by its route and raw query, the
        // same text when the target's path is the route itself.
        if let hit = heights.rendered(key: target, ifNoneMatch: ifNoneMatch) { return hit }
        let uri = URI(target)
        guard HeightRoutes.paths.contains(uri.path) else { return nil }
        return try? heights.rendered(route: uri.path, key: target, ifNoneMatch: ifNoneMatch) { uri.queryParameters }
    }

    /// Bytes the rendered answers hold now (keys, heads and bodies), at most `answer_cache_bytes`.
    var renderedBytes: Int { heights.answers.bytes }

    /// Counts a height answer sent outside the router as the router would (`kbtd_http_requests_total`
    /// as `MetricsMiddleware`, `kbtd_height_answers_total` as the route), and in `kbtd_fast_answers_total`.
    func sent(_ answer: RenderedAnswer, http1: Bool = false) {
        heights.count(answer)
        answer.requests.increment()
        (http1 ? fastAnswersHTTP1 : fastAnswers).increment()
    }

    // MARK: Batches

    /// Whether a frame path takes `head`: `POST /v1/batches` with no query, no `Connection` header
    /// and no `Expect` but `100-continue`.
    func takesBatch(_ head: HTTPRequest) -> Bool {
        !routerOnly && head.method == .post && head.path == "/v1/batches" && head.headerFields[.connection] == nil
            && (head.headerFields[.expect] == nil || Self.expectsContinue(head))
    }

    /// Whether the client waits for `100 Continue` before it sends the body (RFC 9110, 10.1.1).
    static func expectsContinue(_ head: HTTPRequest) -> Bool {
        let values = head.headerFields[values: .expect]
        return values.count == 1 && values[0].lowercased().filter { $0 != " " && $0 != "\t" } == "100-continue"
    }

    /// Whether a request asking `Expect: 100-continue` gets `100 Continue` before the router reads its
    /// body: a `POST /v1/batches` whose headers pass the route's token and framing checks (neither
    /// counts anything: the router counts its refusals; the rate limit, which takes a token, comes
    /// after). Otherwise the router's answer comes without it.
    func continues(_ head: HTTPRequest) -> Bool {
        guard head.method == .post, Self.expectsContinue(head),
              head.path?.split(separator: "?", maxSplits: 1).first == "/v1/batches" else { return false }
        let tokens = settings.current.ingestTokens
        guard tokens.isEmpty || BearerToken.matches(head.headerFields, anyOf: tokens) else { return false }
        return (try? BatchBody.Framing(head.headerFields, limits: settings.current.limits)) != nil
    }

    /// The request context the router's responder builds for a request (`KBTDApp.channels`).
    func context(channel: any Channel, headers: HTTPFields, clients: ClientAddressResolver) -> KBTDRequestContext {
        KBTDRequestContext(source: KBTDRequestSource(logger: logger,
                                                     remoteAddress: clients.clientAddress(channel: channel, headers: headers)))
    }

    /// The route's middlewares, in their order: the rate limit, then the token; nil admits the batch.
    func admitBatch(_ client: KBTDRequestContext, headers: HTTPFields) -> JSONAnswer? {
        rateLimit.refusal(client) ?? auth.refusal(headers)
    }

    /// The body a batch's headers announce (media type, encoding, declared size), held under the
    /// client's share of the body budget as it arrives.
    func batchBody(_ headers: HTTPFields, client: KBTDRequestContext) throws(JSONRefusal) -> (BatchBody.Framing, BatchBody) {
        let framing = try BatchBody.Framing(headers, limits: settings.current.limits)
        return (framing, ingest.body(framing, context: client))
    }

    /// Counts a batch answer sent outside the router as `MetricsMiddleware` would, and in `kbtd_fast_batches_total`.
    func sent(_ answer: JSONAnswer) {
        metrics.request(route: "/v1/batches", status: answer.status.code)
        fastBatches.increment()
    }
}

/// `100 Continue` at once for a request the front lets send its body (`Front.continues`), ahead of
/// the router, which reads the body later; on HTTP/1.1 connections and h2 streams alike.
final class ExpectContinueHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart

    private let front: Front

    init(_ front: Front) {
        self.front = front
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = unwrapInboundIn(data), front.continues(head) {
            context.writeAndFlush(wrapOutboundOut(.head(HTTPResponse(status: .continue))), promise: nil)
        }
        context.fireChannelRead(data)
    }
}
