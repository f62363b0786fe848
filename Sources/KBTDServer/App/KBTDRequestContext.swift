import Hummingbird
import Logging
import NIOCore

/// Where a request came from: what `KBTDRequestContext` is built from, by a
/// listener (the connection's peer) or in-process (a test or an embedder).
public struct KBTDRequestSource: RequestContextSource {
    public var logger: Logger
    /// The peer's address: a TCP address, the Unix socket, or nil when unknown.
    public var remoteAddress: SocketAddress?

    public init(logger: Logger, remoteAddress: SocketAddress?) {
        self.logger = logger
        self.remoteAddress = remoteAddress
    }
}

/// The per-request context: Hummingbird's core storage plus the client's
/// address, which decides whether operations endpoints answer, the rate-limit
/// bucket and the batch's source network.
public struct KBTDRequestContext: RequestContext, RemoteAddressRequestContext {
    public typealias Source = KBTDRequestSource
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?
    /// The client's network (`ClientNetwork`): what rate limits and the poisoning defence count by.
    public let clientNetwork: String
    /// The network's group (`ClientNetwork.group`: an IPv4 /16, an IPv6 /48): what the key capacity
    /// rules and the vote ledger count by. Computed when asked (ingest only), not for every request.
    public var clientGroup: String { ClientNetwork.group(of: remoteAddress) }

    public init(source: KBTDRequestSource) {
        coreContext = .init(source: source)
        remoteAddress = source.remoteAddress
        clientNetwork = ClientNetwork.of(source.remoteAddress)
    }

    /// True for the Unix socket.
    public var isUnixPeer: Bool {
        if case .unixDomainSocket? = remoteAddress { return true }
        return false
    }

    /// True for the Unix socket and loopback peers.
    public var isLocalPeer: Bool {
        switch remoteAddress {
        case .unixDomainSocket?: return true
        case .v4(let address)?: return address.host.hasPrefix("127.")
        case .v6(let address)?: return address.host == "::1" || address.host.hasPrefix("::ffff:127.")
        case nil: return false
        }
    }
}
