import Hummingbird

/// `POST /v1/batches` needs `Authorization: Bearer` one of `ingest_tokens`
/// when any are configured (401 otherwise); reads stay open to phones.
struct IngestAuthMiddleware: RouterMiddleware {
    typealias Context = KBTDRequestContext
    let settings: SettingsBox
    let metrics: ServerMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let tokens = settings.current.ingestTokens
        if tokens.isEmpty || BearerToken.matches(request, anyOf: tokens) { return try await next(request, context) }
        metrics.batch(.unauthorized)
        return JSONResponse.error(.unauthorized, "unauthorized",
                                  detail: "POST /v1/batches needs Authorization: Bearer with an ingest token",
                                  field: "Authorization", headers: [.wwwAuthenticate: "Bearer"])
    }
}
