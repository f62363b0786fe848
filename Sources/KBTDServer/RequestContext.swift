import Hummingbird
import NIOCore

/// The per-request context: Hummingbird's core storage plus the peer address,
/// which decides whether operations endpoints answer.
public struct KBTDRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
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
