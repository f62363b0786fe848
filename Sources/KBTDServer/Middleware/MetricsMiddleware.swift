import Hummingbird

/// Counts every response in `kbtd_http_requests_total`, by route (the API
/// path, or `other` for unknown paths) and status. Outermost but for the
/// request log, so it sees the status of every answer, errors included.
struct MetricsMiddleware: RouterMiddleware {
    typealias Context = KBTDRequestContext
    let metrics: ServerMetrics

    static let routes = Set(KBTDRoutes.methods.keys)

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let route = Self.routes.contains(request.uri.path) ? request.uri.path : "other"
        let response = try await next(request, context)
        metrics.request(route: route, status: response.status.code)
        return response
    }
}
