import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOSSL
import NIOTLS

/// What one accepted connection speaks, layer by layer: an optional PROXY
/// protocol header, optional TLS (with ALPN choosing HTTP/2 or HTTP/1.1),
/// then HTTP served by the one router. Every layer is the ecosystem's own
/// (swift-nio-ssl, swift-nio-http2, Hummingbird's HTTP/1.1 channel) but the h2
/// connection's, which kbtd stacks from swift-nio-http2's parts (`HTTP2Connection`,
/// for `HTTP2FastAnswerHandler`); this only stacks them, taking the TLS context current at accept time so a SIGHUP
/// renewal reaches new connections while open ones keep theirs.
struct ListenerChannel: ServerChildChannel {
    typealias Negotiated = NIONegotiatedHTTPVersion<HTTP1Channel.Value, HTTP2Connection.Value>

    enum Value: ServerChildChannelValue {
        case http1(HTTP1Channel.Value)
        /// TLS: HTTP/1.1 or HTTP/2, known once the handshake's ALPN is done.
        case secure(EventLoopFuture<Negotiated>, on: any Channel)

        var channel: any Channel {
            switch self {
            case .http1(let http1): http1.channel
            case .secure(_, let channel): channel
            }
        }
    }

    let http1: HTTP1Channel
    /// The thin path for cached answers, in front of HTTP/1.1's decoder.
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

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        do {
            let pipeline = channel.pipeline.syncOperations
            if proxyProtocol {
                try pipeline.addHandler(ProxyProtocolHandler(
                    fromTrustedProxy: clients.isTrustedProxy(channel.remoteAddress), clients: clients,
                    logger: logger, metrics: metrics))
            }
            guard let tls else {
                return setupHTTP1(channel: channel, logger: logger).map { .http1($0) }
            }
            try pipeline.addHandler(NIOSSLServerHandler(context: tls.current))
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        let http2 = self.http2
        return channel.configureHTTP2AsyncSecureUpgrade { channel in
            self.setupHTTP1(channel: channel, logger: logger)
        } http2ConnectionInitializer: { channel in
            http2.setup(channel: channel, logger: logger)
        }.map { negotiated in
            let deadline = channel.eventLoop.scheduleTask(in: handshakeTimeout) { channel.close(promise: nil) }
            negotiated.whenComplete { _ in deadline.cancel() }
            return .secure(negotiated, on: channel)
        }
    }

    /// Hummingbird's HTTP/1.1 pipeline with `CachedAnswerBytesHandler` in front of
    /// its response encoder and request decoder (what it writes is bytes for the socket).
    private func setupHTTP1(channel: any Channel, logger: Logger) -> EventLoopFuture<HTTP1Channel.Value> {
        let answers = self.answers
        return http1.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            let encoder = try pipeline.context(handlerType: HTTPResponseEncoder.self)
            try pipeline.addHandler(CachedAnswerBytesHandler(answers), position: .before(encoder.handler))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        switch value {
        case .http1(let connection):
            await http1.handle(value: connection, logger: logger)
        case .secure(let negotiation, _):
            do {
                switch try await negotiation.get() {
                case .http1_1(let connection): await http1.handle(value: connection, logger: logger)
                case .http2(let connection): await http2.handle(value: connection, logger: logger)
                }
            } catch {
                logger.debug("TLS connection ended before HTTP began: \(error)")
            }
        }
    }
}
