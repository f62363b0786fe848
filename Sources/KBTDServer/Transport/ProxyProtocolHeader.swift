import NIOCore

/// The PROXY protocol header (HAProxy's spec, v1 text and v2 binary) a proxy
/// sends before the client's first byte to name the client.
enum ProxyProtocolHeader: Equatable {
    /// The proxy names a TCP client.
    case client(SocketAddress)
    /// No client named (v2 `LOCAL`, v1 `UNKNOWN`: a proxy's health checks) or the client is not IP: the client is unknown.
    case local

    /// v2's 12-byte signature.
    static let v2Signature: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A]
    static let v1Prefix = Array("PROXY ".utf8)
    /// v1 headers are at most 107 bytes, CRLF included.
    static let v1MaxLength = 107
    /// v2 headers carry optional TLVs; more than this is not a header a proxy sends.
    static let v2MaxLength = 16 + 2048

    enum Outcome: Equatable {
        /// Not enough bytes yet.
        case needMore
        /// A header of `length` bytes.
        case header(ProxyProtocolHeader, length: Int)
        /// Not a PROXY header at all (the bytes are the client's own).
        case absent
        /// Starts like one but is malformed.
        case invalid(String)
    }

    /// Parses from the start of `bytes` without consuming.
    static func parse<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Outcome {
        let head = Array(bytes.prefix(v2Signature.count))
        if head.isEmpty { return .needMore }
        if v2Signature.starts(with: head) {
            return head.count < v2Signature.count ? .needMore : parseV2(Array(bytes.prefix(v2MaxLength)))
        }
        if v1Prefix.starts(with: head.prefix(v1Prefix.count)) {
            return head.count < v1Prefix.count ? .needMore : parseV1(bytes)
        }
        return .absent
    }

    /// `PROXY TCP4 203.0.113.7 192.0.2.1 51234 443\r\n`, `PROXY TCP6 ...`, `PROXY UNKNOWN ...\r\n`.
    private static func parseV1<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Outcome {
        let scan = Array(bytes.prefix(v1MaxLength))
        guard let lf = scan.firstIndex(of: 0x0A) else {
            return scan.count >= v1MaxLength ? .invalid("v1 header longer than \(v1MaxLength) bytes") : .needMore
        }
        guard lf > 0, scan[lf - 1] == 0x0D else { return .invalid("v1 header does not end in CRLF") }
        let line = String(decoding: scan[..<(lf - 1)], as: UTF8.self)
        let fields = line.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        guard fields.count >= 2, fields[0] == "PROXY" else { return .invalid("malformed v1 header") }
        if fields[1] == "UNKNOWN" { return .header(.local, length: lf + 1) }
        guard fields.count == 6, fields[1] == "TCP4" || fields[1] == "TCP6" else {
            return .invalid("v1 header needs PROXY TCP4|TCP6 SRC DST SPORT DPORT")
        }
        let isV6 = fields[1] == "TCP6"
        guard IPNetwork.addressBytes(fields[2]) != nil, IPNetwork.addressBytes(fields[3]) != nil,
              fields[2].contains(":") == isV6, fields[3].contains(":") == isV6,
              let port = UInt16(fields[4]), UInt16(fields[5]) != nil,
              let address = SocketAddress.client(ip: fields[2], port: Int(port))
        else { return .invalid("v1 header has a malformed address or port") }
        return .header(.client(address), length: lf + 1)
    }

    /// Signature, version/command, family/protocol, 2-byte length, addresses, TLVs.
    private static func parseV2(_ bytes: [UInt8]) -> Outcome {
        guard bytes.count >= 16 else { return .needMore }
        let versionCommand = bytes[12], family = bytes[13]
        let length = Int(bytes[14]) << 8 | Int(bytes[15])
        guard versionCommand >> 4 == 2 else { return .invalid("v2 header with version \(versionCommand >> 4)") }
        guard 16 + length <= v2MaxLength else { return .invalid("v2 header of \(16 + length) bytes") }
        guard bytes.count >= 16 + length else { return .needMore }
        let total = 16 + length
        switch versionCommand & 0x0F {
        case 0x0: return .header(.local, length: total)
        case 0x1: break
        default: return .invalid("v2 header with command \(versionCommand & 0x0F)")
        }
        let body = bytes[16..<total]
        func port(_ offset: Int) -> Int { Int(body[body.startIndex + offset]) << 8 | Int(body[body.startIndex + offset + 1]) }
        switch family >> 4 {
        case 0x1:  // AF_INET: src 4, dst 4, sport 2, dport 2
            guard length >= 12 else { return .invalid("v2 IPv4 header shorter than its addresses") }
            let text = body.prefix(4).map(String.init).joined(separator: ".")
            guard let address = SocketAddress.client(ip: text, port: port(8)) else { return .invalid("v2 IPv4 address") }
            return .header(.client(address), length: total)
        case 0x2:  // AF_INET6: src 16, dst 16, sport 2, dport 2
            guard length >= 36 else { return .invalid("v2 IPv6 header shorter than its addresses") }
            let source = Array(body.prefix(16))
            let text = stride(from: 0, to: 16, by: 2).map { String(UInt16(source[$0]) << 8 | UInt16(source[$0 + 1]), radix: 16) }
                .joined(separator: ":")
            guard let address = SocketAddress.client(ip: text, port: port(32)) else { return .invalid("v2 IPv6 address") }
            return .header(.client(address), length: total)
        case 0x0, 0x3:  // AF_UNSPEC, AF_UNIX: no IP client to name
            return .header(.local, length: total)
        default:
            return .invalid("v2 header with address family \(family >> 4)")
        }
    }
}
