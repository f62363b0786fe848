import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP2
import NIOHTTPTypes
import NIOHTTPTypesHTTP2

/// An HTTP/2 connection (ALPN `h2` on a TLS listener), built by kbtd rather than by
/// HummingbirdHTTP2's channel, whose multiplexer lives inside `NIOHTTP2Handler` and gives every
/// stream a child channel and a task before anything can look at its frames. Here
/// `NIOHTTP2Handler` runs in frame mode and the connection's pipeline (after TLS) is:
///
/// 0. (before TLS) `ClientGone`: the client's TCP end closes the socket, no close_notify; then, after
///    TLS, `FlushCoalescer`: the frames written between two flushes go to TLS as one write (fewer records);
/// 1. `NIOHTTP2Handler`: framing, HPACK, flow control, stream states, SETTINGS and the DoS limits
///    (swift-nio-http2's defaults, as HummingbirdHTTP2 sets them);
/// 2. `NIOHTTP2ServerConnectionManagementHandler`: the idle timeout (`idle_timeout_seconds` without
///    an open stream) and graceful shutdown (GOAWAY, then close once the streams are done);
/// 3. `HTTP2FrameFront`: cached height answers and `POST /v1/batches` served straight from the frames,
///    no stream channel; the connection's flow-control window; the WINDOW_UPDATE allowance (a flood
///    ends the connection, as swift-nio-http2 ends a PING flood);
/// 4. `HTTP2StreamMultiplexer`: a child channel per other stream, with the stream handlers
///    HummingbirdHTTP2 gives one (`EndStreamCoalescer`, its HTTP/2 codec, kbtd's request handlers,
///    Hummingbird's connection-state handler), served by the router one task per stream (the
///    listener's; a connection whose streams are all served from the frames has no task at all);
/// 5. `ConnectionEnd`: an error reaching the end, or the client closing its side, closes the
///    connection, as HummingbirdHTTP2's connection manager does (after a connection error
///    `NIOHTTP2Handler` has sent its GOAWAY).
struct HTTP2Connection: Sendable {
    typealias Stream = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    /// The request handlers of a stream's pipeline, after its codec (`KBTDApp.channels`); the
    /// router serves the stream as it serves an HTTP/1.1 connection (`ListenerChannel.handle`).
    let streamHandlers: @Sendable () -> [any RemovableChannelHandler]
    /// The rules the frame front asks, and where a request's client is.
    let front: Front
    let clients: ClientAddressResolver
    /// The frame front's streams' deadlines, and `idle` for a connection without an open stream.
    let deadlines: RequestDeadlines

    /// Stacks the connection's handlers (on its event loop, once ALPN chose h2). Nothing waits on
    /// the async side: a stream the router answers is handed to `route` as the multiplexer opens
    /// it (the listener serves it in a task); the streams the frame front serves need no task.
    func configure(channel: any Channel, logger: Logger, route: @escaping @Sendable (Stream) -> Void) throws {
        let configuration = NIOHTTP2Handler.Configuration()
        let handlers = streamHandlers
        let multiplexer = HTTP2StreamMultiplexer(
            mode: .server, channel: channel, targetWindowSize: configuration.stream.targetWindowSize,
            outboundBufferSizeHighWatermark: configuration.stream.outboundBufferSizeHighWatermark,
            outboundBufferSizeLowWatermark: configuration.stream.outboundBufferSizeLowWatermark
        ) { stream in
            stream.eventLoop.makeCompletedFuture {
                let pipeline = stream.pipeline.syncOperations
                try pipeline.addHandler(EndStreamCoalescer())
                try pipeline.addHandler(HTTP2FramePayloadToHTTPServerCodec())
                try pipeline.addHandlers(handlers())
                try pipeline.addHandler(HTTPConnectionStateHandler(idleTimeout: nil, logger: logger))
                route(try Stream(wrappingChannelSynchronously: stream))
            }
        }
        let http2 = NIOHTTP2Handler(mode: .server, connectionConfiguration: configuration.connection,
                                    streamConfiguration: configuration.stream)
        let manager = NIOHTTP2ServerConnectionManagementHandler(
            eventLoop: channel.eventLoop,
            configuration: .init(maxIdleTime: deadlines.idle, maxAge: nil, maxGraceTime: nil, keepalive: nil))
        let pipeline = channel.pipeline.syncOperations
        try pipeline.addHandler(ClientGone.shared, position: .first)
        try pipeline.addHandler(FlushCoalescer())
        try pipeline.addHandler(http2)
        try pipeline.addHandler(manager)
        try pipeline.addHandler(HTTP2FrameFront(front, clients: clients, deadlines: deadlines))
        try pipeline.addHandler(multiplexer)
        try pipeline.addHandler(ConnectionEnd.shared)
        // The connection was active before ALPN chose h2: replay that for the handlers after
        // NIOHTTP2Handler (the manager starts its idle timer on it).
        if channel.isActive {
            try pipeline.addHandler(ReplayActive(), position: .after(http2))
        }
    }

    /// Closes the connection on an error no handler took, and when the client closes its side.
    /// Stateless: one instance serves every connection.
    final class ConnectionEnd: ChannelInboundHandler, RemovableChannelHandler, Sendable {
        typealias InboundIn = HTTP2Frame
        static let shared = ConnectionEnd()

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if case .inputClosed? = event as? ChannelEvent {
                context.close(promise: nil)
            }
            context.fireUserInboundEventTriggered(event)
        }
    }

    /// First in the pipeline, before TLS: once the client has ended the TCP connection (its side
    /// closed, with or without a TLS close_notify first), the socket is closed at once, as nginx does
    /// (it sends no close_notify after the peer's EOF). Going through TLS instead would seal a
    /// close_notify alert nobody reads, write it (usually into a reset socket) and wait on a shutdown
    /// timer, and the ragged EOF would travel the pipeline as an error: work on every connection a
    /// phone drops, for an alert nobody reads.
    /// An h2 client has no use for a half-closed connection (`ConnectionEnd` closed it on that
    /// event already); HTTP/1.1 connections keep half-closure.
    /// Stateless: one instance serves every connection.
    final class ClientGone: ChannelInboundHandler, RemovableChannelHandler, Sendable {
        typealias InboundIn = ByteBuffer
        static let shared = ClientGone()

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if case .inputClosed? = event as? ChannelEvent {
                context.close(promise: nil)
                return
            }
            context.fireUserInboundEventTriggered(event)
        }
    }

    /// Fires `channelActive` to the handlers after it once, then leaves.
    final class ReplayActive: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTP2Frame

        func handlerAdded(context: ChannelHandlerContext) {
            context.fireChannelActive()
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }
}
