import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP2
import NIOHTTPTypes
import NIOSSL
import NIOTLS

/// What one accepted connection speaks, layer by layer: an optional PROXY
/// protocol header, optional TLS (with ALPN choosing HTTP/2 or HTTP/1.1),
/// then HTTP served by the one router. Every layer is the ecosystem's own
/// (swift-nio-ssl, swift-nio-http2, NIO's and Hummingbird's HTTP/1.1 handlers), stacked by kbtd
/// (`HTTP2Connection`, for `HTTP2FrameFront`; `HTTP1Connection`, for `HTTP1FastAnswerHandler`);
/// this only stacks them, taking the TLS context current at accept time so a SIGHUP
/// renewal reaches new connections while open ones keep theirs.
///
/// All of it is set up on the connection's event loop, in the accept's child initializer and the
/// ALPN callback: nothing waits for the handshake on the async side. What the router must serve is
/// handed to `route` as `Work` (an HTTP/1.1 connection, or an h2 stream the multiplexer opened: the
/// same async channel of request and response parts), and `HTTPListener` serves it in a task; an h2
/// connection whose requests are all answered from the frames (cached heights, batches) never has a task.
struct ListenerChannel: Sendable {
    /// What the router serves, in a task of the listener's.
    typealias Work = HTTP1Connection.Value
    typealias Route = @Sendable (Work) -> Void

    /// The HTTP/1.1 channel (Hummingbird's, with kbtd's handlers after NIO's parser), and the h2
    /// connection (`KBTDApp.channels`); HPACK, flow control and framing stay swift-nio-http2's.
    let channels: HTTPChannels
    /// nil: plain HTTP/1.1.
    let tls: TLSContextBox?
    let proxyProtocol: Bool
    let clients: ClientAddressResolver
    let metrics: ServerMetrics
    /// A TLS connection (and its PROXY header) must be through the handshake by then, like a request head.
    let handshakeTimeout: TimeAmount

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
            let http2 = channels.http2
            try pipeline.addHandler(ApplicationProtocolNegotiationHandler { [self] result, channel in
                deadline.cancel()
                switch result {
                case .negotiated("h2"):
                    return channel.eventLoop.makeCompletedFuture {
                        try http2.configure(channel: channel, logger: logger, route: route)
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

    /// The HTTP/1.1 pipeline (`HTTP1Connection.setup`), the connection handed to the router's side (`route`).
    private func setupHTTP1(channel: any Channel, logger: Logger, route: @escaping Route) -> EventLoopFuture<Void> {
        channels.http1.setup(channel: channel, logger: logger).map { route($0) }
    }

    /// Serves a connection's or an h2 stream's requests with the router (`HTTP1Connection.handle`: both
    /// channels answer with one responder).
    func handle(_ work: Work, logger: Logger) async {
        await channels.http1.handle(value: work, logger: logger)
    }
}
