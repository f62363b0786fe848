import HTTPTypes
import NIOCore
import NIOHTTP1

/// What an HTTP/1.1 connection answers without the router, on the request NIO's parser read, before
/// its conversion to HTTP types (`HTTP1Connection`). Every request and every answer passes here, so it keeps
/// the connection's deadlines too (`RequestDeadlineKeeper`, as `RequestDeadlineHandler` keeps an h2 stream's):
/// - a request `Front.heightAnswer` lets a path outside the router answer (a cached height), with the
///   router's head, `Date` and body (`Front.sent` counts it as the router would), as
///   `HTTP2FrameFront` answers h2 streams: no task, no router. Every other request goes on,
///   and so does every request while the router owes an earlier one its answer (answers stay in order)
///   or the client leaves answers unread (the router's writer stops the reading);
/// - a request NIO's parser refused (a 1 MB URI, 200 KB of headers, garbage): a JSON answer, then the
///   connection closes; so does an HTTP/1.0 connection without keep-alive after its request's answer. Bytes pipelined after a `Connection: close` request get none: they are not requests.
final class HTTP1FastAnswerHandler: ChannelDuplexHandler, RemovableChannelHandler, RequestDeadlineKeeper {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let front: Front
    let requestDeadlines: RequestDeadlineClock
    /// Requests passed to the router whose answer has not ended yet.
    private var unanswered = 0
    /// The answer to the request taken here, sent at its end (it has no body: `Front.heightAnswer`).
    private var pending: RenderedAnswer?
    /// True once a parser error was answered.
    private var refused = false
    /// A request part went on since the last `channelReadComplete`: only then do the router's handlers get one.
    private var passed = false
    /// After an HTTP/1.0 request without keep-alive: the answers owed until the connection closes (its own
    /// included), and whether its end was read (what follows is not read). Hummingbird closes after a
    /// `Connection: close` answer, but reads HTTP types, which carry no version.
    private var closeAfterAnswers: Int?
    private var lastRequestRead = false

    init(_ front: Front, deadlines: RequestDeadlines) {
        self.front = front
        requestDeadlines = RequestDeadlineClock(deadlines)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !lastRequestRead else { return }
        switch unwrapInboundIn(data) {
        case .head(let head):
            // Not while the client leaves earlier answers unread: the router's writer then holds
            // the reading back (NIOAsyncChannel), so unread answers cannot pile up here. A request
            // taken here has no body: its end comes with its head, and its deadline moves once, answered.
            if unanswered == 0, context.channel.isWritable, let answer = front.heightAnswer(head) {
                pending = answer
                return
            }
            requestDeadlines.move(context, after: .head, self)
            unanswered += 1
            if head.version == .http1_0, !head.isKeepAlive { closeAfterAnswers = unanswered }
        case .body:
            break
        case .end:
            if let answer = pending {
                pending = nil
                front.sent(answer, http1: true)
                send(answer.http1Head(date: front.date()), answer.body, context: context, promise: nil)
                requestDeadlines.move(context, after: .answered, self)
                return
            }
            requestDeadlines.move(context, after: .bodyEnded, self)
            lastRequestRead = closeAfterAnswers != nil
        }
        passed = true
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        guard passed else { return }
        passed = false
        context.fireChannelReadComplete()
    }

    /// The router's answers (only they pass here): the end of one settles a request passed on.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            unanswered = max(unanswered - 1, 0)
            requestDeadlines.move(context, after: .answered, self)
            if let owed = closeAfterAnswers {
                closeAfterAnswers = owed - 1
                if owed == 1 {
                    let written = closedOnceSent(context)
                    written.futureResult.cascade(to: promise)
                    return context.write(data, promise: written)
                }
            }
        }
        context.write(data, promise: promise)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parserError = error as? HTTPParserError else { return context.fireErrorCaught(error) }
        guard parserError != .closedConnection, !refused else { return }
        refused = true
        let status: HTTPResponse.Status = parserError == .headerOverflow ? .init(code: 431, reasonPhrase: "Request Header Fields Too Large") : .badRequest
        // The body every error answer has (`JSONAnswer.error`); the head is this handler's own, as
        // the connection closes after it.
        let bytes = JSONAnswer.error(
            status, status == .badRequest ? "malformed request" : "request head too large",
            detail: status == .badRequest
                ? "the request is not valid HTTP/1.1 (\(parserError))"
                : "the request line and headers exceed the server's limit"
        ).body
        front.metrics.request(route: "malformed", status: status.code)
        let sent = closedOnceSent(context)
        send(HTTPResponseHead(version: .http1_1, status: .init(statusCode: status.code, reasonPhrase: status.reasonPhrase), headers: [
            "Content-Type": "application/json", "Content-Length": String(bytes.readableBytes), "Connection": "close", "Date": front.date(),
        ]), bytes, context: context, promise: sent)
    }

    /// A promise whose completion (the write done, or failed) closes the connection.
    private func closedOnceSent(_ context: ChannelHandlerContext) -> EventLoopPromise<Void> {
        let sent = context.eventLoop.makePromise(of: Void.self)
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        sent.futureResult.whenComplete { _ in bound.value.close(promise: nil) }
        return sent
    }

    private func send(_ head: HTTPResponseHead, _ body: ByteBuffer?, context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if let body { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: promise)
    }
}
