import Hummingbird

/// The ingest token bucket per client network: 429 with `Retry-After` when it
/// is empty. It runs before authentication, so a client guessing tokens is
/// held to the same rate as one sending batches. The h2 batch path (`HTTP2FrameFront`, through
/// `Front.admitBatch`) asks the same `refusal(_:)`.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = KBTDRequestContext
    let limiter: ClientRateLimiter
    let metrics: ServerMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let refusal = refusal(context) { return refusal.response }
        return try await next(request, context)
    }

    /// The 429 for a client whose bucket is empty (counted; the check takes a token otherwise), or nil to go on.
    func refusal(_ context: KBTDRequestContext) -> JSONAnswer? {
        guard let wait = limiter.check(context) else { return nil }
        metrics.batch(.rateLimited)
        return JSONAnswer.error(.tooManyRequests, "rate limited",
                                detail: "too many batches from this address; retry after \(wait) s", retryAfter: wait)
    }
}
