import Hummingbird
import HummingbirdCore
import NIOCore
import KBTDCore
import NIOHTTP1
import NIOHTTPTypes

/// Counts every response in `kbtd_http_requests_total` (route = the API path,
/// or `other` for unknown paths) and gives router errors (404 and the like) the
/// same JSON error body as every other answer.
struct EveryResponseMiddleware: RouterMiddleware {
    typealias Context = KBTDRequestContext
    let metrics: ServerMetrics

    static let routes = Set(KBTDRoutes.methods.keys)

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let route = Self.routes.contains(request.uri.path) ? request.uri.path : "other"
        let response: Response
        do {
            response = try await next(request, context)
        } catch let error as any HTTPResponseError {
            var answer = JSONResponse.error(error.status, error.status.reasonPhrase.lowercased(),
                                            detail: Self.detail(error.status, request))
            if let original = try? error.response(from: request, context: context) {
                for field in original.headers where field.name != .contentType && field.name != .contentLength {
                    answer.headers.append(field)
                }
            }
            if request.method == .head { answer = answer.createHeadResponse() }
            metrics.request(route: route, status: answer.status.code)
            return answer
        }
        metrics.request(route: route, status: response.status.code)
        return response
    }

    static func detail(_ status: HTTPResponse.Status, _ request: Request) -> String {
        switch status {
        case .notFound: "no such endpoint: \(request.method) \(request.uri.path.prefix(200)) (see the API table in the README)"
        case .methodNotAllowed: "\(request.method) is not allowed on \(request.uri.path.prefix(200))"
        default: "\(status.code) \(status.reasonPhrase)"
        }
    }
}

/// A request NIO's parser refused (a 1 MB URI, 200 KB of headers, garbage)
/// gets a JSON answer before the connection closes, instead of an empty 400.
final class MalformedRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart

    let metrics: ServerMetrics
    private var answered = false

    init(metrics: ServerMetrics) {
        self.metrics = metrics
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parserError = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        guard !answered else { return }
        answered = true
        let status: HTTPResponse.Status = parserError == .headerOverflow ? .init(code: 431, reasonPhrase: "Request Header Fields Too Large") : .badRequest
        let body = JSONOutput.object([
            ("error", .string(status == .badRequest ? "malformed request" : "request head too large")),
            ("detail", .string(status == .badRequest
                ? "the request is not valid HTTP/1.1 (\(parserError))"
                : "the request line and headers exceed the server's limit")),
        ]).serialized()
        let bytes = ByteBuffer(string: body)
        let head = HTTPResponse(status: status, headerFields: [
            .contentType: "application/json", .contentLength: String(bytes.readableBytes), .connection: "close",
        ])
        metrics.request(route: "malformed", status: status.code)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(bytes)), promise: nil)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in loopBound.value.close(promise: nil) }
    }
}
