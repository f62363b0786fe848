import Hummingbird

/// Answers a known path asked with the wrong method with 405 and `Allow`
/// (RFC 9110 §15.5.6), where Hummingbird's router would say 404: the router
/// matches path and method together and cannot tell the two cases apart.
///
///     router.add(middleware: MethodNotAllowedMiddleware(KBTDRoutes.methods))
struct MethodNotAllowedMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Methods each exact path answers.
    let methods: [String: [HTTPRequest.Method]]

    init(_ methods: [String: [HTTPRequest.Method]]) {
        self.methods = methods
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let allowed = methods[request.uri.path], !allowed.contains(request.method) else {
            return try await next(request, context)
        }
        let allow = allowed.map(\.rawValue).joined(separator: ", ")
        return JSONResponse.error(.methodNotAllowed, "method not allowed",
                                  detail: "\(request.uri.path) answers \(allow), not \(request.method.rawValue)",
                                  headers: [.allow: allow])
    }
}
