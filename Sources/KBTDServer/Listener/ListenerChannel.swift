import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOSSL
import NIOTLS

/// What one accepted connection speaks, layer by layer: an optional PROXY
/// protocol header, optional TLS (with ALPN choosing HTTP/2 or HTTP/1.1),
/// then HTTP served by the one router. Every layer is the ecosystem's own
/// (swift-nio-ssl, swift-nio-http2, Hummingbird's HTTP/1.1 channel) but the h2
/// connection's, which kbtd stacks from swift-nio-http2's parts (`HTTP2Connection`,
/// for `HTTP2FastAnswerHandler`); this only stacks them, taking the TLS context current at accept time so a SIGHUP
/// renewal reaches new connections while open ones keep theirs.
///
/// All of it is set up on the connection's event loop, in the accept's child initializer and the
/// ALPN callback: nothing waits for the handshake on the async side. What the router must serve is
/// handed to `route` as `Work` (an HTTP/1.1 connection, or an h2 stream the multiplexer opened), and
/// `HTTPListener` serves it in a task; an h2 connection whose requests are all answered from the
/// frames (cached heights, batches) never has a task.
struct ListenerChannel: Sendable {
    /// What the router serves, in a task of the listener's.
    enum Work: Sendable {
        case http1(HTTP1Channel.Value)
        case stream(HTTP2Connection.Stream)
    }
    typealias Route = @Sendable (Work) -> Void

    let http1: HTTP1Channel
    /// The fast path for cached answers, in front of HTTP/1.1's decoder.
    let answers: CachedAnswers
    let http2: HTTP2Connection
    /// nil: plain HTTP/1.1.
    let tls: TLSContextBox?
    let proxyProtocol: Bool
    let clients: ClientAddressResolver
    let metrics: ServerMetrics
    /// A TLS connection (and its PROXY header) must be through the handshake by then, like a request head.
    let handshakeTimeout: TimeAmount

    init(channels: HTTPChannels, tls: TLSContextBox?, proxyProtocol: Bool, clients: ClientAddressResolver,
         metrics: ServerMetrics, handshakeTimeout: TimeAmount) {
        http1 = channels.http1
        answers = channels.answers
        // Cached heights are answered from the frames; other streams get the handlers HTTP/1.1
        // connections get (`KBTDApp.channels`); HPACK, flow control and framing stay swift-nio-http2's.
        http2 = channels.http2
        self.tls = tls
        self.proxyProtocol = proxyProtocol
        self.clients = clients
        self.metrics = metrics
        self.handshakeTimeout = handshakeTimeout
    }

    /// Stacks the connection's pipeline (on its event loop).
    func setup(channel: any Channel, logger: Logger, route: @escaping Route) -> EventLoopFuture<Void> {
        do {
            let pipeline = channel.pipeline.syncOperations
            if proxyProtocol {
                try pipeline.addHandler(ProxyProtocolHandler(
                    fromTrustedProxy: clients.isTrustedProxy(channel.remoteAddress), clients: clients,
                    logger: logger, metrics: metrics))
            }
            guard let tls else {
                return setupHTTP1(channel: channel, logger: logger, route: route)
            }
            try pipeline.addHandler(NIOSSLServerHandler(context: tls.current))
            // The handshake (and a PROXY header before it) must be done by then, like a request head.
            let deadline = channel.eventLoop.scheduleTask(in: handshakeTimeout) { channel.close(promise: nil) }
            channel.closeFuture.whenComplete { _ in deadline.cancel() }
            let http2 = self.http2
            try pipeline.addHandler(ApplicationProtocolNegotiationHandler { [self] result, channel in
                deadline.cancel()
                switch result {
                case .negotiated("h2"):
                    return channel.eventLoop.makeCompletedFuture {
                        try http2.configure(channel: channel, logger: logger) { route(.stream($0)) }
                    }
                case .negotiated("http/1.1"), .fallback:
                    // An answer's head and body go to TLS as one write: one record, not two.
                    do {
                        try channel.pipeline.syncOperations.addHandler(FlushCoalescer(firstCapacity: 1024))
                    } catch {
                        return channel.eventLoop.makeFailedFuture(error)
                    }
                    return setupHTTP1(channel: channel, logger: logger, route: route)
                case .negotiated:
                    // Only h2 and http/1.1 are offered (TLSContextBox): anything else is a broken client.
                    return channel.close()
                }
            })
            return channel.eventLoop.makeSucceededVoidFuture()
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
    }

    /// Hummingbird's HTTP/1.1 pipeline (`HTTP1Channel.setup`'s handlers, with its configuration)
    /// with `CachedAnswerBytesHandler` in front of its response encoder and request decoder (what it
    /// writes is bytes for the socket). The async channel Hummingbird's `handle` serves is made, and
    /// the connection handed to the router's side (`route`), only with its first request the fast
    /// paths leave (`RouteOnFirstRequest`).
    private func setupHTTP1(channel: any Channel, logger: Logger, route: @escaping Route) -> EventLoopFuture<Void> {
        let answers = self.answers
        let configuration = http1.configuration
        return channel.eventLoop.makeCompletedFuture {
            let pipeline = channel.pipeline.syncOperations
            var limits = NIOHTTPDecoderLimitConfiguration()
            limits.maxHeaderFieldSize = configuration.httpDecoder.maxHeaderFieldSize
            limits.maxHeaderListSize = configuration.httpDecoder.maxHeaderListSize
            limits.maxHeaderFieldCount = configuration.httpDecoder.maxHeaderFieldCount
            try pipeline.configureHTTPServerPipeline(
                withPipeliningAssistance: false, withErrorHandling: false, withOutboundHeaderValidation: false,
                withEncoderConfiguration: .init(), withDecoderLimitConfiguration: limits)
            try pipeline.addHandler(HTTP1ToHTTPServerCodec(secure: false))
            try pipeline.addHandlers(configuration.additionalChannelHandlers())
            try pipeline.addHandler(HTTPConnectionStateHandler(idleTimeout: configuration.idleTimeout.map { .init($0) },
                                                               logger: logger))
            let encoder = try pipeline.context(handlerType: HTTPResponseEncoder.self)
            try pipeline.addHandler(CachedAnswerBytesHandler(answers), position: .before(encoder.handler))
            try pipeline.addHandler(RouteOnFirstRequest {
                route(.http1(try HTTP1Channel.Value(wrappingChannelSynchronously: channel,
                                                    configuration: .init(isOutboundHalfClosureEnabled: true))))
            })
        }
    }

    /// Last on an HTTP/1.1 connection: the first request part that reaches it (one neither
    /// `CachedAnswerBytesHandler`, `BatchIngestHandler` nor `CachedAnswerHandler` took) wraps the
    /// connection in the async channel Hummingbird serves and starts the router's task for it, and
    /// so does the client's half-closure or an error (the task ends the connection as Hummingbird
    /// does); then it leaves. A connection answered only from the fast paths never has a task.
    final class RouteOnFirstRequest: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPRequestPart
        typealias InboundOut = HTTPRequestPart

        private var start: (() throws -> Void)?

        init(start: @escaping () throws -> Void) {
            self.start = start
        }

        /// Hands the connection over (the async channel's handlers go after this one), then leaves.
        private func begin(context: ChannelHandlerContext) {
            guard let start else { return }
            self.start = nil
            do {
                try start()
            } catch {
                context.close(promise: nil)
            }
        }

        private func leave(context: ChannelHandlerContext) {
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let first = start != nil
            begin(context: context)
            context.fireChannelRead(data)
            if first { leave(context: context) }
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            guard start != nil, case .inputClosed? = event as? ChannelEvent else {
                context.fireUserInboundEventTriggered(event)
                return
            }
            begin(context: context)
            context.fireUserInboundEventTriggered(event)
            leave(context: context)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            let first = start != nil
            begin(context: context)
            context.fireErrorCaught(error)
            if first { leave(context: context) }
        }
    }

    func handle(_ work: Work, logger: Logger) async {
        switch work {
        case .http1(let connection): await http1.handle(value: connection, logger: logger)
        case .stream(let stream): await http2.handle(stream: stream, logger: logger)
        }
    }
}
