import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// An address or CIDR block (`10.0.0.0/8`, `127.0.0.1`, `fd00::/8`) in `trusted_proxies`.
public struct IPNetwork: Sendable, Equatable, CustomStringConvertible {
    /// Network bytes: 4 for IPv4, 16 for IPv6, host bits cleared.
    let bytes: [UInt8]
    let prefixLength: Int

    public init?(parsing text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = Self.addressBytes(String(parts[0])) else { return nil }
        let bits = address.count * 8
        var prefix = bits
        if parts.count == 2 {
            guard let parsed = Int(parts[1]), (0...bits).contains(parsed), !parts[1].hasPrefix("+") else { return nil }
            prefix = parsed
        }
        prefixLength = prefix
        bytes = Self.masked(address, prefix)
    }

    public var description: String {
        let text = bytes.count == 4
            ? bytes.map(String.init).joined(separator: ".")
            : stride(from: 0, to: 16, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }.joined(separator: ":")
        return "\(text)/\(prefixLength)"
    }

    /// True when `address` (4 or 16 bytes) lies in this block. IPv4-mapped IPv6
    /// addresses (`::ffff:a.b.c.d`) are compared as IPv4.
    func contains(_ address: [UInt8]) -> Bool {
        let address = Self.unmapped(address)
        guard address.count == bytes.count else { return false }
        return Self.masked(address, prefixLength) == bytes
    }

    /// The bytes of an IP literal, IPv4-mapped IPv6 as IPv4; nil when `text` is not one.
    static func addressBytes(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: &v4) { Array($0) }
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            return unmapped(withUnsafeBytes(of: &v6) { Array($0) })
        }
        return nil
    }

    /// The bytes of a socket address (nil for a Unix socket).
    static func addressBytes(_ address: SocketAddress?) -> [UInt8]? {
        switch address {
        case .v4(let v4)?:
            var raw = v4.address.sin_addr
            return withUnsafeBytes(of: &raw) { Array($0) }
        case .v6(let v6)?:
            var raw = v6.address.sin6_addr
            return unmapped(withUnsafeBytes(of: &raw) { Array($0) })
        default:
            return nil
        }
    }

    static func unmapped(_ address: [UInt8]) -> [UInt8] {
        guard address.count == 16, address[0..<10].allSatisfy({ $0 == 0 }), address[10] == 0xff, address[11] == 0xff
        else { return address }
        return Array(address[12..<16])
    }

    private static func masked(_ address: [UInt8], _ prefix: Int) -> [UInt8] {
        address.enumerated().map { index, byte in
            let keep = max(0, min(8, prefix - index * 8))
            return keep == 8 ? byte : byte & ~(0xff >> UInt8(keep))
        }
    }
}

extension [IPNetwork] {
    /// True when `address` is inside one of the blocks (false for a Unix socket or nil).
    func containsAddress(_ address: SocketAddress?) -> Bool {
        guard let bytes = IPNetwork.addressBytes(address) else { return false }
        return contains { $0.contains(bytes) }
    }
}
