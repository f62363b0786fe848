import NIOCore
import NIOHTTP2

/// Puts an h2 answer's END_STREAM on its last frame instead of a separate empty DATA frame.
///
/// Hummingbird's stream codec ends every answer with an empty DATA frame carrying END_STREAM,
/// written after the body. A client that counts `Content-Length` (curl with nghttp2) is done once
/// the body is in; when the empty frame arrives in a later read, the client resets the stream it
/// considers finished (RST_STREAM, STREAM_CLOSED). swift-nio-http2 counts every inbound
/// RST_STREAM against its rapid-reset budget (200 in 30 s, CVE-2023-44487) and, past it, ends the
/// whole connection with GOAWAY ENHANCE_YOUR_CALM: an honest client uploading batches at a few
/// hundred a second lost its connection after about 1,300 streams.
///
/// So the frame that completes the answer (the HEADERS of an answer with `Content-Length: 0`, or
/// the DATA frame that brings the body to its `Content-Length`) is held until the end arrives
/// (the next write: nothing is left to send), and goes out carrying END_STREAM. Answers without a
/// `Content-Length`, trailers, and anything else pass unchanged. It sits in each stream's
/// pipeline right below Hummingbird's codec (`HTTP2Connection`).
final class EndStreamCoalescer: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    /// Body bytes still expected after the answer's HEADERS; nil: unknown (no Content-Length).
    private var remaining: Int?
    /// The frame that completed the answer, waiting for the END_STREAM to ride on it.
    private var held: (payload: HTTP2Frame.FramePayload, promise: EventLoopPromise<Void>?)?

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let payload = unwrapOutboundIn(data)
        switch payload {
        case .headers(let headers) where !headers.endStream && held == nil && remaining == nil:
            // An answer's (final) HEADERS: learn how long its body is.
            let status = headers.headers.first(name: ":status").flatMap { Int($0) } ?? 0
            guard status >= 200, let length = headers.headers.first(name: "content-length").flatMap({ Int($0) }),
                  length >= 0 else { break }
            remaining = length
            if length == 0 {
                held = (payload, promise)
                return
            }
        case .data(let body) where !body.endStream && held == nil:
            guard let left = remaining else { break }
            let count = body.data.readableBytes
            remaining = left - count
            if count > 0 && left - count == 0 {
                held = (payload, promise)
                return
            }
        case .data(let end) where end.endStream && end.data.readableBytes == 0:
            if let (frame, heldPromise) = held {
                held = nil
                if let heldPromise, let promise { heldPromise.futureResult.cascade(to: promise) }
                context.write(wrapOutboundOut(ending(frame)), promise: heldPromise ?? promise)
                return
            }
        default:
            break
        }
        releaseHeld(context)
        context.write(data, promise: promise)
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        releaseHeld(context)
        context.close(mode: mode, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if let (_, promise) = held {
            held = nil
            promise?.fail(ChannelError.ioOnClosedChannel)
        }
    }

    private func releaseHeld(_ context: ChannelHandlerContext) {
        guard let (frame, promise) = held else { return }
        held = nil
        context.write(wrapOutboundOut(frame), promise: promise)
    }

    private func ending(_ payload: HTTP2Frame.FramePayload) -> HTTP2Frame.FramePayload {
        switch payload {
        case .headers(var headers):
            headers.endStream = true
            return .headers(headers)
        case .data(var body):
            body.endStream = true
            return .data(body)
        default:
            return payload
        }
    }
}
