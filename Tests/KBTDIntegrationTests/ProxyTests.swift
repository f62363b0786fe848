import Foundation
import KBTDCore
import Testing

/// Real client addresses behind a real nginx: clients bind distinct loopback
/// source addresses (127.0.0.x), nginx (127.0.0.1, the one trusted proxy)
/// forwards them to kbtd by X-Forwarded-For (HTTP proxy) or the PROXY
/// protocol (TCP proxy), and every per-client rule must see the client.
/// Loopback is not trusted here (`trusted_peers = none`, rate limits on), so
/// each 127.0.0.x is a stranger network of its own.
@Suite("Client addresses behind a proxy", .ownThreads, .timeLimit(.minutes(10)))
struct ProxyTests {
    static let environment = [
        "KBTD_TRUSTED_PEERS": "none", "KBTD_RATE_LIMIT_LOCAL_PEERS": "true",
        "KBTD_TRUSTED_PROXIES": "127.0.0.1", "KBTD_LOG_LEVEL": "debug",
        // A burst of 4 batches per client network, then 429 (the refill is negligible in a test).
        "KBTD_RATE_LIMIT_BURST": "4", "KBTD_RATE_LIMIT_PER_SECOND": "0.001",
    ]

    /// A daemon with a plain port (X-Forwarded-For from trusted proxies) and a `proxy_protocol` port, and nginx in front of both.
    static func proxiedDaemon(_ environment: [String: String] = environment) throws -> (TestDaemon, TestNginx, proxyProtocolPort: Int) {
        let daemon = try TestDaemon(extraArguments: ["--listen", "127.0.0.1:0 proxy_protocol"], environment: environment).start()
        let line = try #require(daemon.log_().split(separator: "\n").first { $0.contains("(PROXY protocol)") })
        let port = try #require(Int(line.split(separator: ":").last!.prefix(while: \.isNumber)))
        let nginx = try TestNginx(directory: daemon.directory, upstream: daemon.port, proxyProtocolUpstream: port)
        return (daemon, nginx, port)
    }

    static func post(port: Int, from source: String, model: String, headers: [(String, String)] = []) throws -> HTTPTestResponse {
        try HTTPTestConnection(.tcp(host: "127.0.0.1", port: port), source: source).request(
            "POST", "/v1/batches",
            headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")] + headers,
            body: gzip(batchBody(model: model, samples: shows(10, height: 336))))
    }

    /// Asked on the Unix socket, which is plain HTTP whatever the TCP listeners speak.
    static func basis(_ daemon: TestDaemon, _ model: String) throws -> String? {
        try HTTPTestConnection(.unix(path: daemon.unixSocket)).request("GET", "/v1/height?model=\(model)&language=en-US&os=26.1")
            .json?["basis"]?.string
    }

    /// Every `listening on 127.0.0.1:PORT ...` line: the port and what follows it.
    static func listeners(_ daemon: TestDaemon) -> [(port: Int, speaks: String)] {
        daemon.log_().split(separator: "\n").compactMap { line in
            guard let range = line.range(of: "listening on 127.0.0.1:") else { return nil }
            let rest = line[range.upperBound...]
            guard let port = Int(rest.prefix(while: \.isNumber)) else { return nil }
            return (port, String(rest.drop(while: \.isNumber)))
        }
    }

    /// The same scenario through either proxy: three clients make a level answer, one client does not,
    /// and each client's rate limit is its own.
    static func threeClientsCountThreeTimes(_ daemon: TestDaemon, port: Int) throws {
        for source in ["127.0.0.2", "127.0.0.3", "127.0.0.4"] {
            #expect(try post(port: port, from: source, model: "iPhone17,1").status == 202)
        }
        #expect(try basis(daemon, "iPhone17,1") == "model+os+language", "three networks, 30 samples: the level answers")

        for _ in 0..<3 {
            #expect(try post(port: port, from: "127.0.0.5", model: "iPhone17,2").status == 202)
        }
        #expect(try basis(daemon, "iPhone17,2") == "default", "one network, 30 samples: not enough sources")

        // 127.0.0.5 has one batch of its burst left; 127.0.0.6, same proxy, has all of its own.
        #expect(try post(port: port, from: "127.0.0.5", model: "iPhone17,3").status == 202)
        #expect(try post(port: port, from: "127.0.0.5", model: "iPhone17,3").status == 429)
        #expect(try post(port: port, from: "127.0.0.6", model: "iPhone17,3").status == 202)
    }

    @Test(.enabled(if: TestNginx.installed, "\(TestNginx.missing)"))
    func nginxWithXForwardedFor() throws {
        let (daemon, nginx, _) = try Self.proxiedDaemon()
        defer { nginx.stop() }
        try Self.threeClientsCountThreeTimes(daemon, port: nginx.httpPort)
        #expect(daemon.log_().contains("client=127.0.0.3"), "the request log names the client, not the proxy")

        // A client's own X-Forwarded-For is to the left of what nginx appends: it proves nothing.
        for spoof in ["198.51.100.1", "198.51.100.2", "198.51.100.3"] {
            let response = try Self.post(port: nginx.httpPort, from: "127.0.0.7", model: "iPhone16,1", headers: [("X-Forwarded-For", spoof)])
            #expect(response.status == 202)
        }
        #expect(try Self.basis(daemon, "iPhone16,1") == "default", "three spoofed entries through the proxy are still one client")
    }

    @Test(.enabled(if: TestNginx.installed, "\(TestNginx.missing)"))
    func nginxWithProxyProtocol() throws {
        let (daemon, nginx, _) = try Self.proxiedDaemon()
        defer { nginx.stop() }
        try Self.threeClientsCountThreeTimes(daemon, port: nginx.streamPort)
        #expect(daemon.log_().contains("client=127.0.0.4"))
    }

    /// Phones speak HTTPS (and HTTP/2) to nginx: nginx terminating TLS and forwarding with X-Forwarded-For,
    /// and nginx passing TCP through with a PROXY header to a kbtd listener that terminates TLS itself.
    @Test(.enabled(if: TestNginx.installed, "\(TestNginx.missing)"))
    func nginxInFrontOfHTTPSBothWays() throws {
        let daemon = TestDaemon(extraArguments: ["--listen", "127.0.0.1:0 plain", "--listen", "127.0.0.1:0 tls proxy_protocol"],
                                environment: Self.environment)
        let pair = try TestCertificates.make(in: daemon.directory, name: "a")
        daemon.environment["KBTD_TLS_CERTIFICATE"] = pair.chain
        daemon.environment["KBTD_TLS_KEY"] = pair.key
        try daemon.start()
        let listeners = Self.listeners(daemon)
        let plain = try #require(listeners.first { $0.speaks.isEmpty }?.port)
        let tlsWithProxyProtocol = try #require(listeners.first { $0.speaks == " (TLS, HTTP/2) (PROXY protocol)" }?.port)
        let nginx = try TestNginx(directory: daemon.directory, upstream: plain, proxyProtocolUpstream: tlsWithProxyProtocol, tls: pair)
        defer { nginx.stop() }
        func post(_ port: Int, from source: String, model: String) throws -> String {
            let file = daemon.directory.appendingPathComponent("\(UUID().uuidString).json.gz").path
            try Data(gzip(batchBody(model: model, samples: shows(10, height: 336)))).write(to: URL(fileURLWithPath: file))
            let result = try curl(["--interface", source, "--http2", "--cacert", pair.ca, "-X", "POST",
                                         "-H", "Content-Type: application/json", "-H", "Content-Encoding: gzip",
                                         "--data-binary", "@" + file, "-o", "/dev/null", "-w", "%{http_code} %{http_version}",
                                         "https://127.0.0.1:\(port)/v1/batches"])
            return result.stdout + result.stderr
        }
        for (port, model) in [(try #require(nginx.httpsPort), "iPhone18,1"), (nginx.streamPort, "iPhone18,2")] {
            for source in ["127.0.0.2", "127.0.0.3", "127.0.0.4"] {
                #expect(try post(port, from: source, model: model) == "202 2", "\(model) from \(source)")
            }
            #expect(try Self.basis(daemon, model) == "model+os+language", "\(model): three clients through nginx")
        }
        for _ in 0..<3 {
            #expect(try post(nginx.streamPort, from: "127.0.0.5", model: "iPhone18,3") == "202 2")
        }
        #expect(try Self.basis(daemon, "iPhone18,3") == "default", "one client through nginx")
    }

    /// Before this feature (no trusted_proxies), every phone behind nginx was the proxy: the scenario's first step fails.
    @Test(.enabled(if: TestNginx.installed, "\(TestNginx.missing)"))
    func withoutTrustedProxiesEveryClientIsTheProxy() throws {
        var environment = Self.environment
        environment["KBTD_TRUSTED_PROXIES"] = nil
        environment["KBTD_PROXY_PROTOCOL"] = nil
        let daemon = try TestDaemon(environment: environment).start()
        let nginx = try TestNginx(directory: daemon.directory, upstream: daemon.port, proxyProtocolUpstream: daemon.port)
        defer { nginx.stop() }
        for source in ["127.0.0.2", "127.0.0.3", "127.0.0.4"] {
            #expect(try Self.post(port: nginx.httpPort, from: source, model: "iPhone17,1").status == 202)
        }
        #expect(try Self.basis(daemon, "iPhone17,1") == "default", "one network (the proxy)")
    }

    /// Straight to kbtd, not through a trusted proxy: forwarding headers and PROXY headers change nothing.
    @Test func spoofedHeadersFromUntrustedPeersChangeNothing() throws {
        let daemon = try TestDaemon(extraArguments: ["--listen", "127.0.0.1:0 proxy_protocol"], environment: Self.environment).start()
        let line = try #require(daemon.log_().split(separator: "\n").first { $0.contains("(PROXY protocol)") })
        let proxyPort = try #require(Int(line.split(separator: ":").last!.prefix(while: \.isNumber)))
        for (index, spoof) in ["198.51.100.1", "198.51.100.2", "198.51.100.3"].enumerated() {
            let headers = index == 2 ? [("Forwarded", "for=\(spoof)")] : [("X-Forwarded-For", spoof)]
            #expect(try Self.post(port: daemon.port, from: "127.0.0.8", model: "iPhone16,2", headers: headers).status == 202)
        }
        #expect(try Self.basis(daemon, "iPhone16,2") == "default")

        // A PROXY header from an untrusted peer is refused: the connection closes without an answer.
        let spoofer = try HTTPTestConnection(.tcp(host: "127.0.0.1", port: proxyPort), source: "127.0.0.8")
        try spoofer.send(Array("PROXY TCP4 198.51.100.9 127.0.0.1 1234 443\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        #expect(spoofer.isClosedByPeer(within: 60))
        // The same peer without a header is an ordinary direct client on that port.
        let direct = try HTTPTestConnection(.tcp(host: "127.0.0.1", port: proxyPort), source: "127.0.0.8").request("GET", "/healthz")
        #expect(direct.status == 200)
        // A trusted proxy that forgets the header is refused too: otherwise every phone would be the proxy.
        let forgetful = try HTTPTestConnection(.tcp(host: "127.0.0.1", port: proxyPort))
        try forgetful.send(Array("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        #expect(forgetful.isClosedByPeer(within: 60))
        #expect(daemon.log_().contains("PROXY protocol header from"))
    }

    /// A trusted proxy carries many clients on its connections: `max_connections_per_client` does not cap it,
    /// while a direct client still gets only its share.
    @Test func aTrustedProxyIsNotCappedPerClient() throws {
        var environment = Self.environment
        environment["KBTD_MAX_CONNECTIONS_PER_CLIENT"] = "2"
        let daemon = try TestDaemon(environment: environment).start()
        func status(_ connection: HTTPTestConnection) -> Int {
            (try? connection.request("GET", "/healthz").status) ?? 0
        }
        let proxy = try (0..<5).map { _ in try daemon.connection() }
        #expect(proxy.map(status) == [200, 200, 200, 200, 200], "\(daemon.log_())")
        let client = try (0..<3).map { _ in try daemon.connection(from: "127.0.0.9") }
        // Connections are admitted on several event loops, so which of the three is refused may vary.
        #expect(client.map(status).sorted() == [0, 200, 200], "one connection from one client is over its cap")
    }

    /// PROXY v2 (binary, as HAProxy and cloud load balancers send it) and admin access by the resolved address:
    /// a trusted proxy relaying a remote client does not get the operations endpoints loopback gets.
    @Test func proxyProtocolV2AndAdminAccessUseTheClient() throws {
        let daemon = try TestDaemon(extraArguments: ["--listen", "127.0.0.1:0 proxy_protocol"], environment: Self.environment).start()
        let line = try #require(daemon.log_().split(separator: "\n").first { $0.contains("(PROXY protocol)") })
        let proxyPort = try #require(Int(line.split(separator: ":").last!.prefix(while: \.isNumber)))
        func v2(command: UInt8, family: UInt8, addresses: [UInt8]) -> [UInt8] {
            [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A, 0x20 | command, family,
             UInt8(addresses.count >> 8), UInt8(addresses.count & 0xFF)] + addresses
        }
        let remote = v2(command: 1, family: 0x11, addresses: [203, 0, 113, 9, 127, 0, 0, 1, 0x30, 0x39, 0x01, 0xBB])
        let relayed = try HTTPTestConnection(.tcp(host: "127.0.0.1", port: proxyPort))
        try relayed.send(remote)
        #expect(try relayed.request("GET", "/metrics").status == 403, "203.0.113.9 is not a local peer")
        #expect(try relayed.request("GET", "/healthz").status == 200, "the connection stays usable")

        let v6 = v2(command: 1, family: 0x21, addresses: [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [7]
                    + Array(repeating: 0, count: 15) + [1] + [0x30, 0x39, 0x01, 0xBB])
        let relayed6 = try HTTPTestConnection(.tcp(host: "127.0.0.1", port: proxyPort))
        try relayed6.send(v6)
        #expect(try relayed6.request("GET", "/metrics").status == 403, "2001:db8::7 is not a local peer")

        let local = try HTTPTestConnection(.tcp(host: "127.0.0.1", port: proxyPort))
        try local.send(v2(command: 0, family: 0x00, addresses: []))
        // LOCAL names no client: the client is unknown (untrusted), not the proxy, and not what a forwarding header says.
        #expect(try local.request("GET", "/metrics").status == 403, "LOCAL: an unknown client")
        #expect(try local.request("GET", "/metrics", headers: [("X-Forwarded-For", "127.0.0.1")]).status == 403)
        #expect(try local.request("GET", "/healthz").status == 200, "a proxy's health check still gets its answer")

        // X-Forwarded-For from the trusted proxy on the plain port: the same rule.
        let forwarded = try daemon.connection().request("GET", "/metrics", headers: [("X-Forwarded-For", "203.0.113.10")])
        #expect(forwarded.status == 403)
        #expect(try daemon.connection().request("GET", "/metrics").status == 200)
    }
}
