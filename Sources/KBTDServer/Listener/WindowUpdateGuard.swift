import NIOCore
import NIOHTTP2

/// Bounds the WINDOW_UPDATE frames an h2 client may send, as swift-nio-http2 bounds PING,
/// SETTINGS and PRIORITY frames (which it counts, and WINDOW_UPDATE it does not): each frame costs
/// a flow-control update and a pass through every frame handler, and a client may send them
/// without end (`+1` at a time) while nothing is sent to it. An honest client opens a window
/// because it read DATA: at most one WINDOW_UPDATE for the stream and one for the connection per
/// DATA frame kbtd wrote. So in any `window` (30 s) a connection may send `allowance` (200) of
/// them plus two per DATA frame written to it in that window; past it the connection ends with
/// GOAWAY `ENHANCE_YOUR_CALM`, as swift-nio-http2 ends a PING flood.
///
/// Sits after `NIOHTTP2Handler` and its connection manager and before every handler that writes
/// DATA (`HTTP2FastAnswerHandler`, `HTTP2BatchHandler`, the stream multiplexer), so it sees both.
final class WindowUpdateGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    static let allowance = 200
    static let window = TimeAmount.seconds(30)

    private let allowance: Int
    private let window: TimeAmount
    /// WINDOW_UPDATE frames received and DATA frames written since `since`.
    private var updates = 0
    private var dataFrames = 0
    private var since = NIODeadline.now()
    private var ended = false

    init(allowance: Int = WindowUpdateGuard.allowance, window: TimeAmount = WindowUpdateGuard.window) {
        self.allowance = allowance
        self.window = window
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .windowUpdate = unwrapInboundIn(data).payload else {
            context.fireChannelRead(data)
            return
        }
        guard !ended else { return }
        roll()
        updates += 1
        if updates > allowance + 2 * dataFrames {
            ended = true
            let goAway = HTTP2Frame(streamID: .rootStream,
                                    payload: .goAway(lastStreamID: .maxID, errorCode: .enhanceYourCalm, opaqueData: nil))
            // Closed at once: frames of the same read that NIOHTTP2Handler has still to parse would
            // otherwise meet a connection that has sent its GOAWAY, and draw a second one (PROTOCOL_ERROR).
            context.writeAndFlush(wrapOutboundOut(goAway), promise: nil)
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .data = unwrapOutboundIn(data).payload {
            roll()
            dataFrames += 1
        }
        context.write(data, promise: promise)
    }

    /// Starts a new window once the current one has passed.
    private func roll() {
        let now = NIODeadline.now()
        if now - since >= window {
            since = now
            updates = 0
            dataFrames = 0
        }
    }
}
