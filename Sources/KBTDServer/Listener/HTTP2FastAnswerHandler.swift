import NIOCore
import NIOHPACK
import NIOHTTP2

/// The fast path for cached answers on an HTTP/2 connection, at the level of frames: a new
/// stream whose HEADERS frame is a complete `GET /v1/height` or `GET /v1/heights` (END_STREAM
/// set, so no body follows) is answered here with a HEADERS frame and a DATA frame (one HEADERS
/// frame for a 304), END_STREAM on the last, carrying the rendered answer's fields, `Date` and
/// body: the router's answer, headers, 304s and metrics, asked of `Front`. No stream channel,
/// no codec and no task are made for it, which is most of what such a stream cost.
///
/// It sits right after `NIOHTTP2Handler` (in frame mode) and its connection manager, in front of
/// the stream multiplexer (`HTTP2Connection`). What it writes goes through `NIOHTTP2Handler`:
/// HPACK, flow control (a DATA frame the window does not admit waits there), stream states,
/// `SETTINGS_MAX_CONCURRENT_STREAMS` and the DoS limits (rapid reset, CONTINUATION floods, HPACK
/// bombs, glitches) stay swift-nio-http2's, which has checked every frame before it reaches here.
///
/// Everything else goes on unchanged to the multiplexer, whose stream channels serve it with the
/// router: another path or method (`HEAD` included), a request with a body or a
/// `Content-Length`/`Transfer-Encoding`, more than one `If-None-Match`, a query the reply refuses
/// (its 400 comes from the router), and every request while the debug log records requests.
/// Later frames of a stream answered here (a WINDOW_UPDATE, a RST_STREAM) are swift-nio-http2's
/// business and go no further: the multiplexer has no channel for that stream.
///
/// An answer whose DATA the client's flow-control window does not admit waits in `NIOHTTP2Handler`
/// and keeps its stream open. As a stream channel's idle deadline would, a stream still waiting
/// `stallTimeout` later is reset (RST_STREAM CANCEL), so a client that never opens its window
/// cannot hold streams, keep the connection from idling out or hold up a graceful shutdown.
final class HTTP2FastAnswerHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private let front: Front
    /// Streams answered here and not closed yet.
    private var answered: Set<HTTP2StreamID> = []
    /// The highest stream a HEADERS frame has opened: a HEADERS frame on a stream at or below it is not a request.
    private var lastStream = HTTP2StreamID(0)
    /// Answers written during this read, flushed when the read completes (one flush for many streams).
    private var flushPending = false
    /// How long an answered stream may wait for the client's window.
    private let stallTimeout: TimeAmount
    /// The one timer looking for stalled streams, while some wait.
    private var sweep: Scheduled<Void>?

    init(_ front: Front, stallTimeout: TimeAmount) {
        self.front = front
        self.stallTimeout = stallTimeout
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        sweep?.cancel()
        sweep = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        if case .headers(let headers) = frame.payload, frame.streamID > lastStream {
            lastStream = frame.streamID
            if headers.endStream, let answer = answer(headers.headers) {
                answered.insert(frame.streamID)
                send(answer, on: frame.streamID, context: context)
                return
            }
        } else if !answered.isEmpty, answered.contains(frame.streamID) {
            return
        }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if flushPending {
            flushPending = false
            context.flush()
            // What is still open now waits for the client's window.
            if !answered.isEmpty && sweep == nil { scheduleSweep(context: context) }
        }
        context.fireChannelReadComplete()
    }

    /// The events of a stream answered here (its creation, window changes, its close) stop here, as its
    /// later frames do: the multiplexer has no channel for it (the connection manager, before this
    /// handler, has counted it open and closed).
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if !answered.isEmpty {
            switch event {
            case let closed as StreamClosedEvent:
                if answered.remove(closed.streamID) != nil { return }
            case let created as NIOHTTP2StreamCreatedEvent:
                if answered.contains(created.streamID) { return }
            case let window as NIOHTTP2WindowUpdatedEvent:
                if window.streamID != .rootStream && answered.contains(window.streamID) { return }
            default:
                break
            }
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// The answer to a request's header block if the front lets this path answer it; nil passes it on.
    /// swift-nio-http2 has validated the block (pseudo-header fields first, once each, lower-case names).
    private func answer(_ block: HPACKHeaders) -> RenderedAnswer? {
        var method: String?, path: String?, ifNoneMatch: String?, repeated = false, framed = false
        for (name, value, _) in block {
            switch name {
            case ":method": method = value
            case ":path": path = value
            case "if-none-match":
                repeated = repeated || ifNoneMatch != nil
                ifNoneMatch = value
            case "content-length", "transfer-encoding": framed = true
            default: continue
            }
        }
        return front.heightAnswer(method: method, target: path, ifNoneMatch: ifNoneMatch, repeatedIfNoneMatch: repeated,
                                  hasBody: framed)
    }

    /// Resets the streams that still wait `stallTimeout` from now; again while any wait.
    private func scheduleSweep(context: ChannelHandlerContext) {
        let waiting = answered
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        sweep = context.eventLoop.scheduleTask(in: stallTimeout) {
            let (handler, context) = bound.value
            handler.sweep = nil
            let stalled = waiting.intersection(handler.answered)
            for stream in stalled {
                context.write(handler.wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .rstStream(.cancel))), promise: nil)
            }
            if !stalled.isEmpty { context.flush() }
            if !handler.answered.isEmpty { handler.scheduleSweep(context: context) }
        }
    }

    private func send(_ answer: RenderedAnswer, on stream: HTTP2StreamID, context: ChannelHandlerContext) {
        front.sent(answer)
        var block = answer.h2Head
        block.add(name: "date", value: front.date())
        let headers = HTTP2Frame(streamID: stream, payload: .headers(.init(headers: block, endStream: answer.body == nil)))
        context.write(wrapOutboundOut(headers), promise: nil)
        if let body = answer.body {
            context.write(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .data(.init(data: .byteBuffer(body), endStream: true)))),
                          promise: nil)
        }
        flushPending = true
    }
}
