import Hummingbird

/// Renders the errors handlers throw: a `JSONRefusal` renders itself (400,
/// 413, 415, 503 with kbtd's JSON body); router errors (404 and the like) get
/// the same JSON error body, keeping the headers the error carries (`Allow`, ...).
struct JSONErrorMiddleware: RouterMiddleware {
    typealias Context = KBTDRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let refusal as JSONRefusal {
            let answer = try refusal.response(from: request, context: context)
            return request.method == .head ? answer.createHeadResponse() : answer
        } catch let error as any HTTPResponseError {
            var answer = JSONResponse.error(error.status, error.status.reasonPhrase.lowercased(),
                                            detail: Self.detail(error.status, request))
            if let original = try? error.response(from: request, context: context) {
                for field in original.headers where field.name != .contentType && field.name != .contentLength {
                    answer.headers.append(field)
                }
            }
            if request.method == .head { answer = answer.createHeadResponse() }
            return answer
        }
    }

    static func detail(_ status: HTTPResponse.Status, _ request: Request) -> String {
        switch status {
        case .notFound: "no such endpoint: \(request.method) \(request.uri.path.prefix(200)) (see docs/http-api.md)"
        case .methodNotAllowed: "\(request.method) is not allowed on \(request.uri.path.prefix(200))"
        default: "\(status.code) \(status.reasonPhrase)"
        }
    }
}
