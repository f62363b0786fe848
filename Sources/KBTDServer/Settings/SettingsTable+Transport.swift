import Foundation

/// The transport settings: the TLS pair, trusted proxies and the PROXY
/// protocol (the `listen` entry's options are parsed with `listen`).
extension Setting {
    static let transport: [Setting] = [
        .optionalText("tls_certificate", "PEM certificate chain; with tls_key, TCP listeners speak TLS and HTTP/2.", reloadable: true,
                      \.tlsCertificate),
        .optionalText("tls_key", "PEM private key of tls_certificate.", reloadable: true, \.tlsKey),
        Setting("tls_groups", "Key-exchange groups TLS may use, in order of preference.", reloadable: true, parse: { text, settings in
            var groups: [TLSGroup] = []
            // Commas, or colons as in nginx's ssl_ecdh_curve.
            for part in text.split(whereSeparator: { $0 == "," || $0 == ":" }).map({ $0.trimmingCharacters(in: .whitespaces) })
            where !part.isEmpty {
                guard let group = TLSGroup.allCases.first(where: { $0.rawValue.lowercased() == part.lowercased() }) else {
                    return "'\(part.prefix(40))' is not a group kbtd offers (\(TLSGroup.allCases.map(\.rawValue).joined(separator: ", ")))"
                }
                guard !groups.contains(group) else { return "lists \(group.rawValue) twice" }
                groups.append(group)
            }
            guard !groups.isEmpty else { return "must name at least one group" }
            settings.tlsGroups = groups
            return nil
        }, show: { $0.tlsGroups.map(\.rawValue).joined(separator: ",") }),
        Setting("trusted_proxies", "Proxies whose PROXY header or forwarding header names the client: addresses or CIDR blocks.",
                reloadable: true, parse: { text, settings in
            var networks: [IPNetwork] = []
            for part in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !part.isEmpty {
                guard let network = IPNetwork(parsing: part) else {
                    return "'\(part.prefix(60))' is not an IP address or CIDR block (10.0.0.0/8, 127.0.0.1, fd00::/8)"
                }
                networks.append(network)
            }
            settings.trustedProxies = networks
            return nil
        }, show: { $0.trustedProxies.map(\.description).joined(separator: ",") }),
        Setting("forwarded_header", "The header trusted proxies name the client in: x-forwarded-for, forwarded or none.",
                reloadable: true, parse: { text, settings in
            guard let parsed = ForwardedHeader(rawValue: text.lowercased()) else { return "must be x-forwarded-for, forwarded or none" }
            settings.forwardedHeader = parsed
            return nil
        }, show: { $0.forwardedHeader.rawValue }),
        .bool("proxy_protocol", "Every TCP listener expects a PROXY protocol header from trusted proxies.", reloadable: false,
              \.proxyProtocol),
    ]

    /// Rules across transport keys, checked once every value is parsed. The pair is read
    /// here, so a bad one stops `kbtd serve` (78) and fails `kbtd reload` before the daemon sees it.
    static func checkTransport(_ settings: ServerSettings, origin: (String) -> String) throws(SettingsError) {
        switch (settings.tlsCertificate, settings.tlsKey) {
        case (let certificate?, let key?):
            _ = try TLSCredentials.context(certificate: certificate, key: key, groups: settings.tlsGroups)
        case (nil, nil):
            if let wantsTLS = settings.listen.first(where: { $0.options.tls == true }) {
                throw SettingsError(message: "listen (\(origin("listen"))): \(wantsTLS) asks for tls, but tls_certificate and tls_key are not set")
            }
        case (_?, nil):
            throw SettingsError(message: "tls_certificate is set (\(origin("tls_certificate"))) but tls_key is not: set both or neither")
        case (nil, _?):
            throw SettingsError(message: "tls_key is set (\(origin("tls_key"))) but tls_certificate is not: set both or neither")
        }
        if settings.trustedProxies.isEmpty, settings.proxyProtocol || settings.listen.contains(where: { $0.options.proxyProtocol }) {
            throw SettingsError(message: "proxy_protocol is on but trusted_proxies is empty: set trusted_proxies to the proxies' addresses")
        }
    }
}
