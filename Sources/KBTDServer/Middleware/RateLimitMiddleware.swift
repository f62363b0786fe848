import Hummingbird

/// The ingest token bucket per client network: 429 with `Retry-After` when it
/// is empty. It runs before authentication, so a client guessing tokens is
/// held to the same rate as one sending batches.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = KBTDRequestContext
    let limiter: ClientRateLimiter
    let metrics: ServerMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let wait = limiter.check(context) else { return try await next(request, context) }
        metrics.batch(.rateLimited)
        return JSONResponse.error(.tooManyRequests, "rate limited",
                                  detail: "too many batches from this address; retry after \(wait) s", retryAfter: wait)
    }
}
