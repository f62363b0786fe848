import HummingbirdCore
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// Closes connections that send too slowly (slowloris), by `RequestDeadlines`: a new connection's
/// first request head, a request's whole body, and the next head between keep-alive requests
/// each have a deadline; while a request is being answered there is none. One `DeadlineTimer`
/// serves all three. On an h2 stream the router serves, the same rules close the stream.
///
/// It keeps the idle deadline too: Hummingbird's own idle timer (`HTTP1Channel.Configuration.idleTimeout`)
/// restarts on every read, so it cannot hold the absolute head and body deadlines, and would be a second timer.
///
/// On an HTTP/1.1 connection it takes NIO's parts, right after the parser (`HTTP1Connection`), so the
/// requests `HTTP1FastAnswerHandler` answers move it too; on an h2 stream, HTTP types' parts.
final class RequestDeadlineHandler<Request: MessagePart, Response: MessagePart>: ChannelDuplexHandler, RemovableChannelHandler,
    DeadlineKeeper {
    typealias InboundIn = Request
    typealias InboundOut = Request
    typealias OutboundIn = Response
    typealias OutboundOut = Response

    private let deadlines: RequestDeadlines
    /// When the connection is closed unless something moves it; nil: no deadline (a request is being answered).
    private var deadline: NIODeadline?
    private let timer = DeadlineTimer()
    private var armedOnActive = false

    init(_ deadlines: RequestDeadlines) {
        self.deadlines = deadlines
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { armFirstHead(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
    }

    func channelActive(context: ChannelHandlerContext) {
        armFirstHead(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data).kind {
        case .head: move(context, after: .head)
        case .body: break
        case .end: move(context, after: .bodyEnded)
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if unwrapOutboundIn(data).kind == .end { move(context, after: .answered) }
        context.write(data, promise: promise)
    }

    func deadlinesDue(context: ChannelHandlerContext) {
        guard let deadline else { return }
        if deadline <= context.eventLoop.now {
            context.close(promise: nil)
        } else {
            timer.arm(deadline, self, context)
        }
    }

    private func armFirstHead(_ context: ChannelHandlerContext) {
        guard !armedOnActive else { return }
        armedOnActive = true
        move(context, after: .opened)
    }

    private func move(_ context: ChannelHandlerContext, after moment: RequestDeadlines.Moment) {
        deadline = deadlines.deadline(after: moment, now: context.eventLoop.now)
        if let deadline { timer.arm(deadline, self, context) }
    }

    private func stop() {
        timer.cancel()
        deadline = nil
    }
}

/// A part of an HTTP message, NIO's or HTTP types': what `RequestDeadlineHandler` tells apart.
protocol MessagePart {
    var kind: MessagePartKind { get }
}

enum MessagePartKind {
    case head, body, end
}

extension HTTPPart: MessagePart {
    var kind: MessagePartKind {
        switch self {
        case .head: .head
        case .body: .body
        case .end: .end
        }
    }
}

extension HTTPRequestPart: MessagePart {
    var kind: MessagePartKind {
        switch self {
        case .head: .head
        case .body: .body
        case .end: .end
        }
    }
}

extension HTTPResponsePart: MessagePart {
    var kind: MessagePartKind {
        switch self {
        case .head: .head
        case .body: .body
        case .end: .end
        }
    }
}
