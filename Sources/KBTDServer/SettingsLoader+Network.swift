import Foundation

/// The transport keys: `listen` entries with their options, the TLS pair,
/// `trusted_proxies`, `forwarded_header`, `proxy_protocol`.
extension SettingsLoader {
    static let networkKeys = ["tls_certificate", "tls_key", "trusted_proxies", "forwarded_header", "proxy_protocol"]

    static func applyNetwork(_ values: [String: Value], to settings: inout ServerSettings) throws(SettingsError) {
        func bad(_ key: String, _ rule: String) -> SettingsError {
            let value = values[key]!
            return SettingsError(message: "\(key) = '\(value.text.prefix(80))' from \(value.origin): \(rule)")
        }
        if let listen = values["listen"] {
            var addresses: [ListenAddress] = []
            for part in listen.text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !part.isEmpty {
                switch ListenAddress.parseEntry(part) {
                case .success(let address): addresses.append(address)
                case .failure(let error): throw bad("listen", error.reason)
                }
            }
            settings.listen = addresses
        }
        if let value = values["tls_certificate"], !value.text.isEmpty { settings.tlsCertificate = value.text }
        if let value = values["tls_key"], !value.text.isEmpty { settings.tlsKey = value.text }
        switch (settings.tlsCertificate, settings.tlsKey) {
        case (let certificate?, let key?):
            // Read now, so a bad pair stops `kbtd serve` (78) and `kbtd reload` before the daemon sees it.
            _ = try TLSCredentials.context(certificate: certificate, key: key)
        case (nil, nil):
            if let wantsTLS = settings.listen.first(where: { $0.options.tls == true }) {
                throw bad("listen", "\(wantsTLS) asks for tls, but tls_certificate and tls_key are not set")
            }
        case (_?, nil):
            throw SettingsError(message: "tls_certificate is set (\(values["tls_certificate"]!.origin)) but tls_key is not: set both or neither")
        case (nil, _?):
            throw SettingsError(message: "tls_key is set (\(values["tls_key"]!.origin)) but tls_certificate is not: set both or neither")
        }
        if let value = values["trusted_proxies"] {
            var networks: [IPNetwork] = []
            for part in value.text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !part.isEmpty {
                guard let network = IPNetwork(parsing: part) else {
                    throw bad("trusted_proxies", "'\(part.prefix(60))' is not an IP address or CIDR block (10.0.0.0/8, 127.0.0.1, fd00::/8)")
                }
                networks.append(network)
            }
            settings.trustedProxies = networks
        }
        if let value = values["forwarded_header"] {
            guard let parsed = ForwardedHeader(rawValue: value.text.lowercased()) else {
                throw bad("forwarded_header", "must be x-forwarded-for, forwarded or none")
            }
            settings.forwardedHeader = parsed
        }
        if let value = values["proxy_protocol"] {
            switch value.text.lowercased() {
            case "true", "yes", "1": settings.proxyProtocol = true
            case "false", "no", "0": settings.proxyProtocol = false
            default: throw bad("proxy_protocol", "must be true or false")
            }
        }
        if settings.trustedProxies.isEmpty, settings.proxyProtocol || settings.listen.contains(where: { $0.options.proxyProtocol }) {
            throw SettingsError(message: "proxy_protocol is on but trusted_proxies is empty: set trusted_proxies to the proxies' addresses")
        }
    }
}
