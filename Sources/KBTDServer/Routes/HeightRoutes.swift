import Hummingbird
import HummingbirdCore
import KBTDCore

/// `GET /v1/height` and `GET /v1/heights`: answered from the in-memory index,
/// with `Cache-Control` and a strong `ETag` (304 on `If-None-Match`).
///
/// Every path takes its answer from `rendered(route:query:ifNoneMatch:)`, one
/// cache of framed answers (`RenderedAnswers`): the router's handlers below, and
/// the h2 fast path (`HTTP2FrameFront`, through `Front.heightAnswer`), which
/// answers the common case from an h2 connection's frames without the router. A
/// question the reply refuses (a `FieldError`) always goes through the router,
/// whose handlers throw it as a `JSONRefusal` (rendered by `JSONErrorMiddleware`).
struct HeightRoutes: Sendable {
    let heights: LiveHeights
    let settings: SettingsBox
    let metrics: ServerMetrics
    /// The answers every path sends, framed, by question (bounded by `answer_cache_bytes`).
    let answers: RenderedAnswers

    init(heights: LiveHeights, settings: SettingsBox, metrics: ServerMetrics, limitBytes: Int? = nil) {
        self.heights = heights
        self.settings = settings
        self.metrics = metrics
        answers = RenderedAnswers(limitBytes: limitBytes ?? settings.current.answerCacheBytes)
    }

    /// An answer before it becomes a `Response` or HTTP parts: 200 with the
    /// JSON body, or 304 without one; `headers` in the order they are sent.
    struct Reply: Sendable {
        var status: HTTPResponse.Status
        var headers: HTTPFields
        var body: [UInt8]?
        /// The levels that answered, for `kbtd_height_answers_total` (`count(_:)`).
        var basis: EstimateBasis?
        var bases: [EstimateBasis] = []
    }

    static let paths: Set<String> = ["/v1/height", "/v1/heights"]

    // Each handler names its own route: the router matches `/v1/height/` and `//v1/height` to
    // `/v1/height` too, so the raw path of the request must not decide which answer is sent.
    func height(_ request: Request, context: KBTDRequestContext) throws(JSONRefusal) -> Response {
        try response(for: request, route: "/v1/height")
    }

    func allHeights(_ request: Request, context: KBTDRequestContext) throws(JSONRefusal) -> Response {
        try response(for: request, route: "/v1/heights")
    }

    private func response(for request: Request, route: String) throws(JSONRefusal) -> Response {
        do throws(FieldError) {
            let query = request.uri.query.map { route + "?" + $0 } ?? route
            let answer = try rendered(route: route, key: query, ifNoneMatch: request.headers[.ifNoneMatch]) {
                request.uri.queryParameters
            }
            count(answer)
            guard let body = answer.body else { return Response(status: answer.reply.status, headers: answer.fields) }
            return Response(status: answer.reply.status, headers: answer.fields, body: .init(byteBuffer: body))
        } catch {
            throw JSONRefusal(error, "invalid query")
        }
    }

    /// The framed answer to `route` with the query `parameters` reads: kept from an earlier
    /// request with the same `key` (the route and its raw query: the request target) in this
    /// generation of the index and this `cache_max_age`, else computed, framed and kept.
    func rendered(route: String, key target: String, ifNoneMatch: String?,
                  parameters: () -> FlatDictionary<Substring, Substring>) throws(FieldError) -> RenderedAnswer {
        let key = Self.key(target, ifNoneMatch)
        // Read before computing: an answer computed while the index changes is stored as already stale.
        let generation = heights.generation
        let maxAge = settings.cacheMaxAge
        if let hit = answers.entry(key, generation: generation, maxAge: maxAge) { return hit }
        let reply = try self.reply(path: route, query: parameters(), ifNoneMatch: ifNoneMatch)
        let answer = RenderedAnswer(generation: generation, maxAge: maxAge, route: route, reply: reply, metrics: metrics)
        answers.store(answer, key: key)
        return answer
    }

    /// The kept answer for `key`, if there is one for this generation and `cache_max_age`.
    func rendered(key target: String, ifNoneMatch: String?) -> RenderedAnswer? {
        answers.entry(Self.key(target, ifNoneMatch), generation: heights.generation, maxAge: settings.cacheMaxAge)
    }

    private static func key(_ target: String, _ ifNoneMatch: String?) -> String {
        ifNoneMatch.map { target + "\n" + $0 } ?? target
    }

    /// Counts an answer's levels in `kbtd_height_answers_total`, once per answer sent.
    func count(_ answer: RenderedAnswer) {
        metrics.count(answer.levels)
    }

    /// The answer to `path` (one of `paths`, exactly: callers pass the route they matched)
    /// with its query. Throws for a query that breaks a rule.
    func reply(path: String, query parameters: FlatDictionary<Substring, Substring>,
               ifNoneMatch: String?) throws(FieldError) -> Reply {
        precondition(Self.paths.contains(path), "HeightRoutes.reply for \(path)")
        if path == "/v1/height" {
            let query = try HeightQuery(parameters: { parameters[Substring($0)].map(String.init) })
            return cached(heights.height(query), ifNoneMatch: ifNoneMatch)
        }
        let model = try HeightQuery.model(parameters["model"].map(String.init))
        let os = parameters["os"].map(String.init)
        if let os { _ = try HeightQuery.osMajor(os) }
        var screen: ScreenSize?
        if let text = parameters["screen"].map(String.init) { screen = try HeightQuery.screen(text) }
        return cached(heights.heights(model: model, os: os, screen: screen), ifNoneMatch: ifNoneMatch)
    }

    private func cached(_ answer: CachedAnswer, ifNoneMatch match: String?) -> Reply {
        let cacheControl = "public, max-age=\(settings.current.cacheMaxAge)"
        if let match,
           match == "*" || match.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == answer.etag }) {
            return Reply(status: .notModified, headers: [.cacheControl: cacheControl, .eTag: answer.etag], body: nil,
                         basis: answer.basis, bases: answer.bases)
        }
        return Reply(status: .ok, headers: [.contentType: "application/json", .cacheControl: cacheControl, .eTag: answer.etag],
                     body: answer.body, basis: answer.basis, bases: answer.bases)
    }
}
