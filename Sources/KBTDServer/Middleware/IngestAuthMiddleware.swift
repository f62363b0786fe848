import Hummingbird

/// `POST /v1/batches` needs `Authorization: Bearer` one of `ingest_tokens`
/// when any are configured (401 otherwise); reads stay open to phones.
/// The h2 batch path (`HTTP2FrameFront`, through `Front.admitBatch`) asks the same `refusal(_:)`.
struct IngestAuthMiddleware: RouterMiddleware {
    typealias Context = KBTDRequestContext
    let settings: SettingsBox
    let metrics: ServerMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let refusal = refusal(request.headers) { return refusal.response }
        return try await next(request, context)
    }

    /// The 401 for a request without a valid ingest token (counted), or nil to go on.
    func refusal(_ headers: HTTPFields) -> JSONAnswer? {
        let tokens = settings.current.ingestTokens
        if tokens.isEmpty || BearerToken.matches(headers, anyOf: tokens) { return nil }
        metrics.batch(.unauthorized)
        return JSONAnswer.error(.unauthorized, "unauthorized",
                                detail: "POST /v1/batches needs Authorization: Bearer with an ingest token",
                                field: "Authorization", headers: [.wwwAuthenticate: "Bearer"])
    }
}
