import Foundation
import HTTPTypes
import NIOCore
import Synchronization

/// Finds the address every per-client rule uses (rate limits, per-network
/// votes and budgets, the trusted-peer exemption, admin access, logs).
///
/// A direct peer is its own client. A peer in `trusted_proxies` speaks for
/// someone else: the PROXY protocol header it sent names the client, and so
/// does the right-most entry of the forwarding header that is not itself a
/// trusted proxy (entries further left were written by the client and
/// prove nothing). From anyone else those headers are ignored.
final class ClientAddressResolver: Sendable {
    private struct Policy {
        var trustedProxies: [IPNetwork]
        var header: ForwardedHeader
    }

    private let policy: Mutex<Policy>
    /// Clients named by PROXY headers, by connection, until the connection closes; nil for a
    /// header that names no client (v1 `UNKNOWN`, v2 `LOCAL`, a client that is not IP).
    private let proxied = Mutex<[ObjectIdentifier: SocketAddress?]>([:])

    init(_ settings: ServerSettings) {
        policy = Mutex(Policy(trustedProxies: settings.trustedProxies, header: settings.forwardedHeader))
    }

    /// SIGHUP: `trusted_proxies` and `forwarded_header` take effect for the next request.
    func update(_ settings: ServerSettings) {
        policy.withLock { $0 = Policy(trustedProxies: settings.trustedProxies, header: settings.forwardedHeader) }
    }

    func isTrustedProxy(_ address: SocketAddress?) -> Bool {
        policy.withLock { $0.trustedProxies.containsAddress(address) }
    }

    /// Records the client a trusted proxy's PROXY header named for `connection` (nil: it named none).
    func record(_ client: SocketAddress?, for connection: any Channel) {
        let key = ObjectIdentifier(connection)
        proxied.withLock { $0[key] = client }
        connection.closeFuture.whenComplete { [self] _ in _ = proxied.withLock { $0.removeValue(forKey: key) } }
    }

    /// The client behind a request on `channel` (the connection, or an HTTP/2 stream whose parent is the connection).
    func clientAddress(channel: any Channel, headers: HTTPFields) -> SocketAddress? {
        let peer = channel.remoteAddress
        let policy = policy.withLock { $0 }
        guard policy.trustedProxies.containsAddress(peer) else { return peer }
        var client = peer
        let named = proxied.withLock { table in
            table[ObjectIdentifier(channel)] ?? channel.parent.flatMap { table[ObjectIdentifier($0)] }
        }
        if let named {
            // A PROXY header that names no client, or names the proxy that sent it, leaves the client
            // unknown (untrusted, `ClientNetwork` "unknown"): never whatever the forwarding header,
            // which the client wrote, says.
            guard let named, named.ipAddress != peer?.ipAddress else { return nil }
            client = named
            guard policy.trustedProxies.containsAddress(named) else { return named }
        }
        // Walk from the right: each trusted hop vouches for the entry before it. A hop that
        // names no readable address (`unknown`, an obfuscated `_node`, a zone index, garbage)
        // leaves the client unknown: an untrusted client of its own (`ClientNetwork` "unknown"),
        // never the proxy itself with a trusted proxy's standing.
        let name = policy.header == .forwarded ? Self.forwarded : Self.xForwardedFor
        for entry in Self.forwardingEntries(headers[values: name], policy.header).reversed() {
            guard let address = entry else { return nil }
            client = address
            if !policy.trustedProxies.containsAddress(address) { break }
        }
        return client
    }

    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
    static let forwarded = HTTPField.Name("Forwarded")!

    /// The hops of the forwarding header, left to right; nil for an entry that names no IP address
    /// (`unknown`, an obfuscated `_node`, garbage): a walk that reaches it ends with an unknown client.
    /// `values`: every line of that header, in order.
    static func forwardingEntries(_ values: [String], _ header: ForwardedHeader) -> [SocketAddress?] {
        switch header {
        case .none:
            return []
        case .xForwardedFor:
            return values.flatMap { $0.split(separator: ",") }.map { node(String($0)) }
        case .forwarded:
            return values.flatMap { $0.split(separator: ",") }.map { element in
                let pairs = element.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
                guard let pair = pairs.first(where: { $0.lowercased().hasPrefix("for=") }) else { return nil }
                var value = String(pair.dropFirst(4))
                if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
                return node(value)
            }
        }
    }

    /// `203.0.113.7`, `203.0.113.7:4711`, `2001:db8::1`, `[2001:db8::1]:4711`.
    static func node(_ raw: String) -> SocketAddress? {
        var text = raw.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            text = String(text[text.index(after: text.startIndex)..<close])
        } else if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") {
            text = String(text[..<colon])
        }
        guard IPNetwork.addressBytes(text) != nil else { return nil }
        return SocketAddress.client(ip: text, port: 0)
    }
}

extension SocketAddress {
    /// A client address from text (a PROXY or forwarding header). `SocketAddress(ipAddress:port:)`
    /// leaves `host` empty, and per-client rules key on `host`: this fills it as accepted sockets have it.
    static func client(ip text: String, port: Int) -> SocketAddress? {
        switch try? SocketAddress(ipAddress: text, port: port) {
        case .v4(let v4)?: SocketAddress(v4.address)
        case .v6(let v6)?: SocketAddress(v6.address)
        default: nil
        }
    }
}
