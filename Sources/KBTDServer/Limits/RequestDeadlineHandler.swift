import HummingbirdCore
import NIOHTTPTypes
import NIOCore

/// Closes connections that send too slowly (slowloris), by `RequestDeadlines`: a new connection's
/// first request head, a request's whole body, and the next head between keep-alive requests
/// each have a deadline; while a request is being answered there is none. One `DeadlineTimer`
/// serves all three. On an h2 stream the router serves, the same rules close the stream; an HTTP/1.1
/// connection's `HTTP1FastAnswerHandler` keeps them itself (`RequestDeadlineKeeper`), as it sees every
/// request and answer.
///
/// It keeps the idle deadline too: Hummingbird's own idle timer (`HTTP1Channel.Configuration.idleTimeout`)
/// restarts on every read, so it cannot hold the absolute head and body deadlines, and would be a second timer.
final class RequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler, RequestDeadlineKeeper {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let requestDeadlines: RequestDeadlineClock

    init(_ deadlines: RequestDeadlines) {
        requestDeadlines = RequestDeadlineClock(deadlines)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: requestDeadlines.move(context, after: .head, self)
        case .body: break
        case .end: requestDeadlines.move(context, after: .bodyEnded, self)
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { requestDeadlines.move(context, after: .answered, self) }
        context.write(data, promise: promise)
    }
}

/// A handler that keeps its connection's (or stream's) `RequestDeadlines` with a `RequestDeadlineClock`,
/// moving it as requests and answers pass; the clock starts with the connection and stops with it.
protocol RequestDeadlineKeeper: DeadlineKeeper, ChannelInboundHandler {
    var requestDeadlines: RequestDeadlineClock { get }
}

extension RequestDeadlineKeeper {
    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { requestDeadlines.opened(context, self) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        requestDeadlines.stop()
    }

    func channelActive(context: ChannelHandlerContext) {
        requestDeadlines.opened(context, self)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        requestDeadlines.stop()
        context.fireChannelInactive()
    }

    func deadlinesDue(context: ChannelHandlerContext) {
        requestDeadlines.due(context, self)
    }
}

/// The deadline a connection's requests have now (`RequestDeadlines`), on one `DeadlineTimer`.
final class RequestDeadlineClock {
    private let deadlines: RequestDeadlines
    /// When the connection is closed unless something moves it; nil: no deadline (a request is being answered).
    private var deadline: NIODeadline?
    private let timer = DeadlineTimer()
    private var armedOnActive = false

    init(_ deadlines: RequestDeadlines) {
        self.deadlines = deadlines
    }

    /// The connection is open: its first head is due.
    func opened(_ context: ChannelHandlerContext, _ keeper: any DeadlineKeeper) {
        guard !armedOnActive else { return }
        armedOnActive = true
        move(context, after: .opened, keeper)
    }

    func move(_ context: ChannelHandlerContext, after moment: RequestDeadlines.Moment, _ keeper: any DeadlineKeeper) {
        deadline = deadlines.deadline(after: moment, now: context.eventLoop.now)
        if let deadline { timer.arm(deadline, keeper, context) }
    }

    /// The timer went off: closes the connection if its deadline has passed, else waits on.
    func due(_ context: ChannelHandlerContext, _ keeper: any DeadlineKeeper) {
        guard let deadline else { return }
        if deadline <= context.eventLoop.now {
            context.close(promise: nil)
        } else {
            timer.arm(deadline, keeper, context)
        }
    }

    func stop() {
        timer.cancel()
        deadline = nil
    }
}
