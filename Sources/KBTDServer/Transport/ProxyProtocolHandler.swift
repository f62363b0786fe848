import Logging
import NIOCore

/// First handler on a `proxy_protocol` listener: reads the PROXY header a
/// trusted proxy sends before anything else (before TLS, too), records the
/// client it names, then hands the rest of the bytes on and leaves the pipeline.
///
/// A trusted proxy must send a header (without one every phone would count as
/// the proxy). Anyone else is a direct client and must not: a PROXY header
/// from an untrusted peer is a client naming its own address, and the
/// connection is closed.
final class ProxyProtocolHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let fromTrustedProxy: Bool
    private let clients: ClientAddressResolver
    private let logger: Logger
    private let metrics: ServerMetrics
    private var buffered: ByteBuffer?
    private var done = false

    init(fromTrustedProxy: Bool, clients: ClientAddressResolver, logger: Logger, metrics: ServerMetrics) {
        self.fromTrustedProxy = fromTrustedProxy
        self.clients = clients
        self.logger = logger
        self.metrics = metrics
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !done else {
            context.fireChannelRead(data)
            return
        }
        var incoming = unwrapInboundIn(data)
        if buffered == nil {
            buffered = incoming
        } else {
            buffered!.writeBuffer(&incoming)
        }
        let peer = context.channel.remoteAddress.map { "\($0)" } ?? "?"
        switch (ProxyProtocolHeader.parse(buffered!.readableBytesView), fromTrustedProxy) {
        case (.needMore, _):
            return
        case (.header(let header, let length), true):
            if case .client(let client) = header {
                clients.record(client, for: context.channel)
            } else {
                clients.record(nil, for: context.channel)
            }
            buffered!.moveReaderIndex(forwardBy: length)
            pass(context)
        case (.absent, false):
            pass(context)
        case (.absent, true), (.invalid, true):
            reject(context, "trusted proxy \(peer) sent no valid PROXY protocol header; is proxy_protocol on in the proxy?")
        case (.header, false), (.invalid, false):
            // The peer is a client here: its address goes to the log only at debug (JournalLogHandler).
            reject(context, "PROXY protocol header from a peer not in trusted_proxies", client: peer)
        }
    }

    private func pass(_ context: ChannelHandlerContext) {
        done = true
        if let rest = buffered, rest.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(rest)) }
        buffered = nil
        context.fireChannelReadComplete()
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    private func reject(_ context: ChannelHandlerContext, _ reason: String, client: String? = nil) {
        done = true
        buffered = nil
        metrics.request(route: "proxy_protocol", status: 400)
        logger.warning("closing connection: \(reason)")
        if let client { logger.debug("closed connection's peer", metadata: ["client": "\(client)"]) }
        context.close(promise: nil)
    }
}
