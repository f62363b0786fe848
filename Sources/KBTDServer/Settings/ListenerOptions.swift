/// What a TCP listener speaks besides HTTP: written after its address in
/// `listen`, as nginx does (`listen = 0.0.0.0:8443 tls, 127.0.0.1:8420 plain`).
public struct ListenerOptions: Sendable, Equatable {
    /// `tls` (true), `plain` (false) or unsaid (nil: TLS exactly when `tls_certificate` and `tls_key` are set).
    public var tls: Bool?
    /// `proxy_protocol`: connections from trusted proxies start with a PROXY protocol v1/v2 header.
    public var proxyProtocol = false

    public init(tls: Bool? = nil, proxyProtocol: Bool = false) {
        self.tls = tls
        self.proxyProtocol = proxyProtocol
    }

    /// The words after the address, for logs.
    public var words: [String] {
        var words: [String] = []
        if let tls { words.append(tls ? "tls" : "plain") }
        if proxyProtocol { words.append("proxy_protocol") }
        return words
    }
}

extension ListenAddress {
    /// Parses one `listen` entry: `HOST:PORT` followed by options separated by spaces.
    /// Returns the reason when the entry is malformed.
    static func parseEntry(_ text: String) -> Result<ListenAddress, EntryError> {
        let words = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard let first = words.first, var address = ListenAddress(parsing: first) else {
            return .failure(EntryError(reason: "must be HOST:PORT [tls|plain] [proxy_protocol][, ...]"))
        }
        for word in words.dropFirst() {
            switch word.lowercased() {
            case "tls", "ssl": address.options.tls = true
            case "plain": address.options.tls = false
            case "proxy_protocol": address.options.proxyProtocol = true
            default: return .failure(EntryError(reason: "unknown listener option '\(word.prefix(40))' (tls, plain or proxy_protocol)"))
            }
        }
        return .success(address)
    }

    /// The entry as `listen` takes it: the address, then its options.
    var entryText: String { ([description] + options.words).joined(separator: " ") }

    struct EntryError: Error {
        var reason: String
    }
}

/// The header a trusted proxy names the client in (`forwarded_header`). Only
/// one is read: a proxy that sets one passes the other through from the client
/// untouched, so reading both would let a client pick its own address.
public enum ForwardedHeader: String, Sendable, Equatable, CaseIterable {
    /// `X-Forwarded-For: client, proxy1` (nginx's `$proxy_add_x_forwarded_for`, most load balancers).
    case xForwardedFor = "x-forwarded-for"
    /// RFC 7239 `Forwarded: for=client;proto=https, for=proxy1`.
    case forwarded
    /// Neither: only the PROXY protocol names clients.
    case none
}

/// A TLS key-exchange group (`tls_groups`), by its IANA name. The default list is swift-nio-ssl's own:
/// the post-quantum hybrid first (iOS 26 offers it), then the classic curves.
public enum TLSGroup: String, Sendable, Equatable, CaseIterable {
    case x25519MLKEM768 = "X25519MLKEM768"
    case x25519 = "X25519"
    case p256 = "P-256"
    case p384 = "P-384"
    case p521 = "P-521"

    public static let defaults: [TLSGroup] = [.x25519MLKEM768, .x25519, .p256, .p384]
}
