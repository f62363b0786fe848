import NIOCore

/// How long each part of a request may take (`header_timeout_seconds`, `body_timeout_seconds`,
/// `idle_timeout_seconds`) and when its deadline falls, decided here once for every path: HTTP/1.1
/// connections (`HTTP1FastAnswerHandler`) and the router's h2 streams (`RequestDeadlineHandler`), the streams an h2 connection
/// serves from its frames (`HTTP2FrameFront`), an h2 connection without streams (`HTTP2Connection`) and
/// a TLS handshake, due within `head` like a request head (`ListenerChannel`). Deadlines are absolute
/// (slowloris): trickling a byte at a time moves none.
struct RequestDeadlines: Sendable, Equatable {
    /// What a request has just done; each starts the deadline of what must come next.
    enum Moment {
        /// A connection opened: its first request head is due within `head`.
        case opened
        /// A request head arrived: its whole body is due within `body`.
        case head
        /// The body ended: no deadline while the answer is made (the commit queue is bounded).
        case bodyEnded
        /// The answer was written: the next head on a keep-alive connection is due within `idle`, and
        /// an h2 answer whose DATA waits for the client's flow-control window may wait that long.
        case answered
    }

    let head: TimeAmount
    let body: TimeAmount
    let idle: TimeAmount

    init(_ limits: ServerSettings.Limits) {
        head = .seconds(Int64(limits.headerTimeoutSeconds))
        body = .seconds(Int64(limits.bodyTimeoutSeconds))
        idle = .seconds(Int64(limits.idleTimeoutSeconds))
    }

    /// The deadline `moment` starts at `now` (the event loop's clock); nil: none.
    func deadline(after moment: Moment, now: NIODeadline) -> NIODeadline? {
        switch moment {
        case .opened: now + head
        case .head: now + body
        case .bodyEnded: nil
        case .answered: now + idle
        }
    }
}

/// A handler whose deadlines a `DeadlineTimer` keeps.
protocol DeadlineKeeper: AnyObject {
    /// The timer went off, at the earliest deadline armed or later: act on the deadlines passed
    /// (by `context.eventLoop.now`), and arm the timer again for the rest.
    func deadlinesDue(context: ChannelHandlerContext)
}

/// The one scheduled task behind a connection's deadlines, however many they are and however often
/// they move: arming a deadline no earlier than the one scheduled changes nothing (when the timer
/// goes off early, its keeper arms it again for what is left), so a keep-alive connection's requests
/// cost a clock read each, not a timer cancelled and scheduled three times.
final class DeadlineTimer {
    private var scheduled: Scheduled<Void>?
    private var at = NIODeadline.distantFuture

    /// Makes `keeper.deadlinesDue` run on the context's event loop at `deadline`, or earlier if the
    /// timer is set earlier already.
    func arm(_ deadline: NIODeadline, _ keeper: any DeadlineKeeper, _ context: ChannelHandlerContext) {
        if scheduled != nil && at <= deadline { return }
        scheduled?.cancel()
        at = deadline
        let bound = NIOLoopBound((timer: self, keeper: keeper, context: context), eventLoop: context.eventLoop)
        scheduled = context.eventLoop.scheduleTask(deadline: deadline) {
            let (timer, keeper, context) = bound.value
            timer.scheduled = nil
            keeper.deadlinesDue(context: context)
        }
    }

    func cancel() {
        scheduled?.cancel()
        scheduled = nil
    }
}
