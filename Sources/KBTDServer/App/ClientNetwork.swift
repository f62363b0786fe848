import NIOCore

/// A client's network, the unit every per-client rule counts in (rate limit,
/// connections per client, the poisoning defence's sources): IPv4 peers by
/// address, IPv6 peers by their /64 (one phone may rotate through a whole
/// /64), IPv4-mapped IPv6 as IPv4, the Unix socket as one network.
enum ClientNetwork {
    /// The client network of `address`: an IPv4 address, an IPv6 /64, `unix` or `unknown`.
    static func of(_ address: SocketAddress?) -> String {
        switch address {
        case .v4(let v4)?: return v4.host
        case .v6(let v6)?:
            let host = v6.host.lowercased()
            if host.hasPrefix("::ffff:"), host.contains(".") { return String(host.dropFirst(7)) }
            return ipv6Prefix64(host)
        case .unixDomainSocket?: return "unix"
        case nil: return "unknown"
        }
    }

    /// The group of networks one operator is likely to hold many of: an IPv4
    /// /16 (`a.b.0.0/16`), an IPv6 /48 (65,536 /64s), `unix` or `unknown`.
    /// The key capacity rules bound what one group may create per day, and the vote
    /// ledger what one group may open.
    static func group(of address: SocketAddress?) -> String {
        let network = of(address)
        switch address {
        case .v4?, .v6?:
            if network.hasSuffix("::/64") {
                return network.split(separator: ":").prefix(3).joined(separator: ":") + "::/48"
            }
            let octets = network.split(separator: ".")
            guard octets.count == 4 else { return network }
            return "\(octets[0]).\(octets[1]).0.0/16"
        default: return network
        }
    }

    /// The first four hextets of an IPv6 address, expanding `::`.
    static func ipv6Prefix64(_ host: String) -> String {
        let parts = host.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        var groups: [String] = []
        if let gap = parts.firstIndex(of: ""), host.contains("::") {
            let head = parts[..<gap].filter { !$0.isEmpty }
            let tail = parts[(gap + 1)...].filter { !$0.isEmpty }
            groups = head + Array(repeating: "0", count: max(0, 8 - head.count - tail.count)) + tail
        } else {
            groups = parts
        }
        return groups.prefix(4).joined(separator: ":") + "::/64"
    }
}
