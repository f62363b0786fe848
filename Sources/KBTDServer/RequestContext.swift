import Hummingbird
import NIOCore

/// The per-request context: Hummingbird's core storage plus the client address
/// (behind a trusted proxy, the client it names), which every per-client rule reads.
public struct KBTDRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// `clientAddress`: the peer, or the client a trusted proxy named (ClientAddressResolver).
    init(source: ApplicationRequestContextSource, clientAddress: SocketAddress?) {
        coreContext = .init(source: source)
        remoteAddress = clientAddress
        if let clientAddress, clientAddress != source.channel.remoteAddress {
            logger[metadataKey: "client"] = "\(clientAddress.ipAddress ?? "\(clientAddress)")"
        }
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
