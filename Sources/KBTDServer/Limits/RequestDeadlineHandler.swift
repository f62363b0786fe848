import HummingbirdCore
import NIOHTTPTypes
import NIOCore

/// Closes connections that send too slowly (slowloris): a new connection must
/// deliver a complete request head within `headerTimeout`; once the head is
/// in, the whole body must arrive within `bodyTimeout`. Between keep-alive
/// requests the next head must arrive within `idleTimeout`. Trickling a byte
/// at a time resets nothing: the deadlines are absolute.
///
/// One timer serves all three deadlines: moving a deadline later only records
/// it (the timer, when it fires early, sleeps again until the recorded one),
/// so a keep-alive connection's requests cost a clock read each, not a timer
/// cancelled and scheduled three times.
final class RequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let headerTimeout: TimeAmount
    private let bodyTimeout: TimeAmount
    private let idleTimeout: TimeAmount
    /// When the connection is closed unless something resets it; nil: no deadline (a request is being answered).
    private var deadline: NIODeadline?
    private var timer: Scheduled<Void>?
    private var timerAt = NIODeadline.distantFuture
    private var armedOnActive = false

    init(headerTimeout: TimeAmount, bodyTimeout: TimeAmount, idleTimeout: TimeAmount) {
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.idleTimeout = idleTimeout
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
        switch unwrapInboundIn(data) {
        case .head: arm(context, bodyTimeout)
        case .body: break
        case .end: deadline = nil
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { arm(context, idleTimeout) }
        context.write(data, promise: promise)
    }

    private func armFirstHead(_ context: ChannelHandlerContext) {
        guard !armedOnActive else { return }
        armedOnActive = true
        arm(context, headerTimeout)
    }

    private func arm(_ context: ChannelHandlerContext, _ timeout: TimeAmount) {
        let at = NIODeadline.now() + timeout
        deadline = at
        // A timer due no later than `at` will find the new deadline when it fires.
        if timer == nil || timerAt > at { schedule(context, at) }
    }

    private func schedule(_ context: ChannelHandlerContext, _ at: NIODeadline) {
        timer?.cancel()
        timerAt = at
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: at) {
            let (handler, context) = bound.value
            handler.fire(context)
        }
    }

    private func fire(_ context: ChannelHandlerContext) {
        timer = nil
        guard let deadline else { return }
        if deadline <= .now() {
            context.close(promise: nil)
        } else {
            schedule(context, deadline)
        }
    }

    private func stop() {
        timer?.cancel()
        timer = nil
        deadline = nil
    }
}
