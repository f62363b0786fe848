import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// The fast path for cached answers: on an HTTP/1.1 connection (or an HTTP/2 stream), a plain
/// `GET /v1/height` or `GET /v1/heights` is answered here, in the channel
/// pipeline on the connection's event loop, with the bytes the router would
/// send (the same `HeightRoutes.reply`, headers, `ETag`/304 and request
/// metrics). It skips what dominates a cached answer's cost: the hop to
/// Hummingbird's async handler and back, the router and its middlewares.
///
/// Everything else passes on untouched, to the router: other paths and
/// methods (`HEAD` included), a query the reply refuses (its 400 comes from
/// the router), a request with a body or a `Connection` header, any request
/// while the debug log records requests, and any request while an earlier one
/// on the connection is still unanswered by the router (answering first would
/// put responses out of order for a pipelining client).
///
/// It sits after the request deadline and malformed-request handlers, so
/// those see every request and every answer, and before Hummingbird's
/// connection-state handler, whose idle timer the listener therefore leaves
/// off (`RequestDeadlineHandler` keeps the idle deadline). HTTP/1.1 connections
/// and h2 streams get it alike (`KBTDApp.requestHandlers(_:limits:)`); only the
/// protocol it counts under differs.
final class CachedAnswerHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let answers: CachedAnswers
    /// Which of `kbtd_fast_answers_total` counts this handler's answers.
    private let fast: FastAnswerProtocol
    /// Requests passed to the router whose response has not ended yet.
    private var unanswered = 0
    /// The answer to a request taken here, sent once its `.end` arrives.
    private var pending: RenderedAnswer?

    /// `protocol`: `.h2` when the handler serves one HTTP/2 stream (one request; HPACK, flow control
    /// and framing are swift-nio-http2's), `.http1` for an HTTP/1.1 connection.
    init(_ answers: CachedAnswers, protocol fast: FastAnswerProtocol = .http1) {
        self.answers = answers
        self.fast = fast
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            if unanswered == 0, let taken = answer(head) {
                pending = taken
                return
            }
            unanswered += 1
            context.fireChannelRead(data)
        case .body:
            // A request taken here has no body (no Content-Length, no Transfer-Encoding).
            if pending == nil { context.fireChannelRead(data) }
        case .end:
            guard let answer = pending else {
                context.fireChannelRead(data)
                return
            }
            pending = nil
            send(answer, context: context)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), unanswered > 0 { unanswered -= 1 }
        context.write(data, promise: promise)
    }

    /// The reply for `head` if this path may answer it; nil passes it on.
    private func answer(_ head: HTTPRequest) -> RenderedAnswer? {
        guard head.method == .get, let target = head.path, head.headerFields[.connection] == nil,
              head.headerFields[.contentLength] == nil, head.headerFields[.transferEncoding] == nil else { return nil }
        return answers.answer(target: target, ifNoneMatch: head.headerFields[.ifNoneMatch])
    }

    private func send(_ answer: RenderedAnswer, context: ChannelHandlerContext) {
        answers.count(answer, on: fast)
        let head = HTTPResponse(status: answer.reply.status, headerFields: answer.fields(date: answers.dates.now()))
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if let body = answer.body { context.write(wrapOutboundOut(.body(body)), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }
}
