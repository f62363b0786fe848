import HummingbirdCore
import Logging
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// TLS and proxies around the listeners: which socket speaks what, and what a SIGHUP changes.
struct Transport: Sendable {
    /// nil when `tls_certificate`/`tls_key` are not set.
    let tls: TLSContextBox?
    let clients: ClientAddressResolver

    /// Reads the TLS pair (a SettingsError names the file: exit 78).
    init(_ settings: ServerSettings) throws(SettingsError) {
        if let certificate = settings.tlsCertificate, let key = settings.tlsKey {
            tls = try TLSContextBox(certificate: certificate, key: key, groups: settings.tlsGroups)
        } else {
            tls = nil
        }
        clients = ClientAddressResolver(settings)
    }

    /// The channel a listener on `socket` serves its connections with.
    func channel(for socket: ListenerSocket, settings: ServerSettings, channels: HTTPChannels,
                 metrics: ServerMetrics) -> ListenerChannel {
        let options = Self.options(for: socket, settings)
        return ListenerChannel(
            channels: channels, tls: options.tls ? tls : nil, proxyProtocol: options.proxyProtocol, clients: clients,
            metrics: metrics, handshakeTimeout: RequestDeadlines(settings.limits).head)
    }

    /// What `socket` speaks. Unix sockets are plain. A TCP socket takes its `listen` entry's
    /// options; an adopted one (socket activation) those of the entry with its port, if any.
    /// Unsaid, TLS is on exactly when the pair is set.
    static func options(for socket: ListenerSocket, _ settings: ServerSettings) -> (tls: Bool, proxyProtocol: Bool) {
        var entry: ListenerOptions
        switch socket {
        case .unix:
            return (false, false)
        case .tcp(let address):
            entry = address.options
        case .inherited(let inherited):
            guard let port = tcpPort(of: inherited.fd) else { return (false, false) }
            entry = settings.listen.first(where: { $0.port == port })?.options ?? ListenerOptions()
        }
        let tls = (entry.tls ?? true) && settings.tlsCertificate != nil && settings.tlsKey != nil
        return (tls, entry.proxyProtocol || settings.proxyProtocol)
    }

    /// The port an inherited TCP socket listens on; nil for other families.
    static func tcpPort(of fd: Int32) -> Int? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let status = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard status == 0 else { return nil }
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) } }
        case AF_INET6:
            return withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) } }
        default:
            return nil
        }
    }

    /// SIGHUP: trusted proxies and the forwarding header change at once; the TLS pair is re-read
    /// (a renewed certificate reaches new connections, open ones keep theirs; an unchanged one
    /// keeps the running context, whose session tickets clients resume with). Turning TLS on or
    /// off needs a restart.
    func reload(_ new: ServerSettings, logger: Logger) {
        clients.update(new)
        if let box = tls, let certificate = new.tlsCertificate, let key = new.tlsKey {
            do {
                if try box.reload(certificate: certificate, key: key, groups: new.tlsGroups) {
                    logger.notice("TLS certificate re-read from \(certificate), key exchange \(new.tlsGroups.map(\.rawValue).joined(separator: ","))")
                } else {
                    logger.notice("TLS certificate unchanged in \(certificate): the running TLS context stays, so sessions resume")
                }
            } catch {
                logger.error("TLS pair not reloaded, keeping the running one: \(error)")
            }
        } else if (tls != nil) != (new.tlsCertificate != nil) {
            logger.warning("tls_certificate/tls_key turned TLS on or off; that takes effect after a restart")
        }
    }
}
