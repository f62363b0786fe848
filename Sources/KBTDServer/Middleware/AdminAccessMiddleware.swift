import Hummingbird

/// `/metrics`, `/v1/stats` and `/dashboard` answer only local peers (loopback,
/// the Unix socket) unless the admin token is presented; others get 403.
struct AdminAccessMiddleware: RouterMiddleware {
    typealias Context = KBTDRequestContext
    let settings: SettingsBox

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if context.isLocalPeer { return try await next(request, context) }
        if let token = settings.current.adminToken, BearerToken.matches(request, anyOf: [token]) {
            return try await next(request, context)
        }
        return JSONResponse.error(.forbidden, "forbidden",
                                  detail: "this endpoint answers only on loopback and the Unix socket, or with the admin token")
    }
}
