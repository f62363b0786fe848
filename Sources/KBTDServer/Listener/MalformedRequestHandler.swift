import Hummingbird
import HummingbirdCore
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// A request NIO's parser refused (a 1 MB URI, 200 KB of headers, garbage)
/// gets a JSON answer before the connection closes, instead of an empty 400.
/// Bytes pipelined after a `Connection: close` request are dropped without an answer: that request
/// closes the connection once it and every request before it are answered.
final class MalformedRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart

    let front: Front
    private var answered = false

    init(_ front: Front) {
        self.front = front
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parserError = error as? HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        // Bytes after a request that said `Connection: close`: that request and those before it are
        // answered in order (the connection closes after its answer); the bytes after it are not requests.
        guard parserError != .closedConnection, !answered else { return }
        answered = true
        let status: HTTPResponse.Status = parserError == .headerOverflow ? .init(code: 431, reasonPhrase: "Request Header Fields Too Large") : .badRequest
        // The body every error answer has (`JSONAnswer.error`); the head is this handler's own, as
        // the connection closes after it.
        let bytes = JSONAnswer.error(
            status, status == .badRequest ? "malformed request" : "request head too large",
            detail: status == .badRequest
                ? "the request is not valid HTTP/1.1 (\(parserError))"
                : "the request line and headers exceed the server's limit"
        ).body
        let head = HTTPResponse(status: status, headerFields: [
            .contentType: "application/json", .contentLength: String(bytes.readableBytes), .connection: "close",
            .date: front.date(),
        ])
        front.metrics.request(route: "malformed", status: status.code)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(bytes)), promise: nil)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in loopBound.value.close(promise: nil) }
    }
}
