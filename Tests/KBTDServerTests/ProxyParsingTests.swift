import Foundation
import HTTPTypes
import NIOCore
import NIOEmbedded
import Testing
@testable import KBTDServer

/// The pure parts of proxy support: PROXY headers, forwarding headers, CIDR
/// blocks and the listener options in `listen`.
@Suite("Proxy and listener parsing")
struct ProxyParsingTests {
    static func parse(_ bytes: [UInt8]) -> ProxyProtocolHeader.Outcome {
        ProxyProtocolHeader.parse(bytes)
    }

    static let v2Signature = ProxyProtocolHeader.v2Signature

    @Test func proxyV1() throws {
        let line = Array("PROXY TCP4 203.0.113.7 192.0.2.1 51234 443\r\nGET".utf8)
        guard case .header(.client(let address), let length) = Self.parse(line) else {
            Issue.record("not parsed: \(Self.parse(line))")
            return
        }
        #expect(address.ipAddress == "203.0.113.7" && address.port == 51234 && length == line.count - 3)
        #expect(ClientNetwork.of(address) == "203.0.113.7", "per-client rules key on the named client")
        guard case .header(.client(let v6), _) = Self.parse(Array("PROXY TCP6 2001:db8::7 ::1 1 2\r\n".utf8)) else {
            Issue.record("TCP6 not parsed")
            return
        }
        #expect(v6.ipAddress == "2001:db8::7")
        #expect(Self.parse(Array("PROXY UNKNOWN\r\n".utf8)) == .header(.local, length: 15))
        #expect(Self.parse(Array("PROXY TCP4 203.0.113.7".utf8)) == .needMore)
        #expect(Self.parse(Array("PRO".utf8)) == .needMore)
        #expect(Self.parse(Array("GET / HTTP/1.1\r\n".utf8)) == .absent)
        #expect(Self.parse([0x16, 0x03, 0x01]) == .absent, "a TLS ClientHello")
        for bad in ["PROXY TCP4 203.0.113.7 192.0.2.1 51234\r\n", "PROXY TCP4 2001:db8::1 192.0.2.1 1 2\r\n",
                    "PROXY TCP4 203.0.113.700 192.0.2.1 1 2\r\n", "PROXY TCP4 203.0.113.7 192.0.2.1 1 70000\r\n",
                    "PROXY TCP4 203.0.113.7 192.0.2.1 1 2\n", "PROXY " + String(repeating: "9", count: 120)] {
            guard case .invalid = Self.parse(Array(bad.utf8)) else {
                Issue.record("accepted: \(bad)")
                continue
            }
        }
    }

    @Test func proxyV2() throws {
        let ipv4 = Self.v2Signature + [0x21, 0x11, 0x00, 0x0C, 198, 51, 100, 4, 10, 0, 0, 1, 0x1F, 0x90, 0x01, 0xBB]
        guard case .header(.client(let address), let length) = Self.parse(ipv4 + [0x47]) else {
            Issue.record("v2 IPv4 not parsed")
            return
        }
        #expect(address.ipAddress == "198.51.100.4" && address.port == 8080 && length == 28)
        // TLVs after the addresses are skipped with the header.
        let withTLV = Self.v2Signature + [0x21, 0x11, 0x00, 0x11, 198, 51, 100, 4, 10, 0, 0, 1, 0x1F, 0x90, 0x01, 0xBB,
                                          0x04, 0x00, 0x02, 0xAB, 0xCD]
        #expect(Self.parse(withTLV) == .header(.client(address), length: 33))
        #expect(Self.parse(Array(ipv4.prefix(20))) == .needMore)
        #expect(Self.parse(Array(Self.v2Signature.prefix(5))) == .needMore)
        #expect(Self.parse(Self.v2Signature + [0x20, 0x00, 0x00, 0x00]) == .header(.local, length: 16))
        for bad in [Self.v2Signature + [0x11, 0x11, 0x00, 0x00], Self.v2Signature + [0x22, 0x11, 0x00, 0x00],
                    Self.v2Signature + [0x21, 0x11, 0x00, 0x04, 1, 2, 3, 4], Self.v2Signature + [0x21, 0x11, 0xFF, 0xFF]] {
            guard case .invalid = Self.parse(bad) else {
                Issue.record("accepted: \(bad)")
                continue
            }
        }
    }

    @Test func forwardingHeadersAreReadRightToLeft() throws {
        let lines = ["198.51.100.1, 203.0.113.7", "10.0.0.2"]
        let entries = ClientAddressResolver.forwardingEntries(lines, .xForwardedFor).map { $0?.ipAddress }
        #expect(entries == ["198.51.100.1", "203.0.113.7", "10.0.0.2"])
        #expect(ClientAddressResolver.forwardingEntries(lines, .none).isEmpty)
        let forwarded = [#"for=192.0.2.60;proto=http;by=203.0.113.43, For="[2001:db8:cafe::17]:4711", for=unknown"#]
        let hops = ClientAddressResolver.forwardingEntries(forwarded, .forwarded).map { $0?.ipAddress }
        #expect(hops == ["192.0.2.60", "2001:db8:cafe::17", nil])
        #expect(ClientAddressResolver.node("203.0.113.7:4711")?.ipAddress == "203.0.113.7")
        #expect(ClientAddressResolver.node("[::1]:80")?.ipAddress == "::1")
        #expect(ClientAddressResolver.node("example.com") == nil)
        #expect(ClientAddressResolver.node("_hidden") == nil)
    }

    /// A trusted proxy's right-most hop that names no readable address must not leave the proxy
    /// as the client (a trusted peer, exempt from rate limits, allowed /v1/stats): the client is unknown.
    @Test(arguments: ["garbage", "unknown", "_hidden", "fe80::1%eth0", "198.51.100.1, garbage", "999.1.1.1", ""])
    func unreadableForwardedHopIsAnUnknownClient(_ hop: String) throws {
        var settings = try SettingsLoader.load(configFile: nil, environment: ["KBTD_TRUSTED_PROXIES": "127.0.0.1"], flags: [:])
        let resolver = ClientAddressResolver(settings)
        let channel = EmbeddedChannel()
        channel.remoteAddress = try SocketAddress(ipAddress: "127.0.0.1", port: 4000)
        var headers = HTTPFields()
        headers[ClientAddressResolver.xForwardedFor] = hop
        let client = resolver.clientAddress(channel: channel, headers: headers)
        if hop.isEmpty {
            #expect(client?.ipAddress == "127.0.0.1", "no hop at all: the proxy speaks for itself")
        } else {
            #expect(client == nil, "\(hop): \(String(describing: client))")
            #expect(KBTDRequestContext(source: KBTDRequestSource(logger: .init(label: "t"), remoteAddress: client)).clientNetwork == "unknown")
        }
        // The same with RFC 7239's header.
        settings = try SettingsLoader.load(configFile: nil, environment: ["KBTD_TRUSTED_PROXIES": "127.0.0.1",
                                                                          "KBTD_FORWARDED_HEADER": "forwarded"], flags: [:])
        resolver.update(settings)
        headers = HTTPFields()
        headers[ClientAddressResolver.forwarded] = hop.isEmpty ? "proto=http" : "for=\"\(hop)\""
        #expect(resolver.clientAddress(channel: channel, headers: headers) == nil, "Forwarded: \(hop)")
        // A readable client stays what it was.
        headers[ClientAddressResolver.forwarded] = "for=198.51.100.9"
        #expect(resolver.clientAddress(channel: channel, headers: headers)?.ipAddress == "198.51.100.9")
    }

    /// A trusted proxy's PROXY header that names no client (v1 `UNKNOWN`, v2 `LOCAL`) or names the
    /// proxy itself leaves the client unknown: never the `X-Forwarded-For` the client wrote, which
    /// let one client invent an address per batch and pass the rate limit.
    @Test(arguments: [nil, "127.0.0.1"])
    func aProxyHeaderWithoutAClientMakesTheClientUnknown(_ named: String?) throws {
        let settings = try SettingsLoader.load(configFile: nil, environment: ["KBTD_TRUSTED_PROXIES": "127.0.0.1"], flags: [:])
        let resolver = ClientAddressResolver(settings)
        let channel = EmbeddedChannel()
        channel.remoteAddress = try SocketAddress(ipAddress: "127.0.0.1", port: 4000)
        resolver.record(try named.map { try SocketAddress(ipAddress: $0, port: 1) }, for: channel)
        var headers = HTTPFields()
        headers[ClientAddressResolver.xForwardedFor] = "198.51.100.23"
        #expect(resolver.clientAddress(channel: channel, headers: headers) == nil)
        // A header that names a client is that client, whatever the forwarding header says.
        let other = EmbeddedChannel()
        other.remoteAddress = try SocketAddress(ipAddress: "127.0.0.1", port: 4001)
        resolver.record(try SocketAddress(ipAddress: "203.0.113.7", port: 1), for: other)
        #expect(resolver.clientAddress(channel: other, headers: headers)?.ipAddress == "203.0.113.7")
    }

    @Test func cidrBlocks() throws {
        let block = try #require(IPNetwork(parsing: "10.1.0.0/16"))
        #expect(block.contains(IPNetwork.addressBytes("10.1.200.3")!))
        #expect(!block.contains(IPNetwork.addressBytes("10.2.0.1")!))
        #expect(block.contains(IPNetwork.addressBytes("::ffff:10.1.0.9")!), "IPv4-mapped IPv6 is IPv4")
        let v6 = try #require(IPNetwork(parsing: "fd00::/8"))
        #expect(v6.contains(IPNetwork.addressBytes("fdab::1")!) && !v6.contains(IPNetwork.addressBytes("fe80::1")!))
        #expect(IPNetwork(parsing: "127.0.0.1")?.description == "127.0.0.1/32")
        #expect(IPNetwork(parsing: "10.0.0.0/8")?.contains(IPNetwork.addressBytes("10.255.255.255")!) == true)
        for bad in ["10.0.0.0/33", "10.0.0/8", "localhost", "10.0.0.0/", "/8", "::1/129", "10.0.0.0/+8"] {
            #expect(IPNetwork(parsing: bad) == nil, "\(bad)")
        }
    }

    @Test func listenEntriesCarryOptions() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let pair = try TestCertificates.make(in: directory, name: "a")
        let settings = try SettingsLoader.load(configFile: nil, environment: [
            "KBTD_LISTEN": "0.0.0.0:8443 tls, 127.0.0.1:8420 plain, 127.0.0.1:8421 proxy_protocol",
            "KBTD_TRUSTED_PROXIES": "127.0.0.1, 10.0.0.0/8",
            "KBTD_TLS_CERTIFICATE": pair.chain, "KBTD_TLS_KEY": pair.key,
        ], flags: [:])
        #expect(settings.listen.map(\.options) == [ListenerOptions(tls: true), ListenerOptions(tls: false),
                                                   ListenerOptions(proxyProtocol: true)])
        #expect(settings.trustedProxies.map(\.description) == ["127.0.0.1/32", "10.0.0.0/8"])
        func error(_ environment: [String: String]) -> String {
            do {
                _ = try SettingsLoader.load(configFile: nil, environment: environment, flags: [:])
                return ""
            } catch {
                return error.message
            }
        }
        #expect(error(["KBTD_LISTEN": "127.0.0.1:8420 quic"]).contains("unknown listener option 'quic'"))
        #expect(error(["KBTD_TRUSTED_PROXIES": "10.0.0.0/40"]).contains("trusted_proxies"))
        #expect(error(["KBTD_FORWARDED_HEADER": "x-real-ip"]).contains("forwarded_header"))
        #expect(error(["KBTD_LISTEN": "127.0.0.1:8421 proxy_protocol"]).contains("trusted_proxies is empty"))
        #expect(error(["KBTD_TLS_KEY": "/nonexistent.key"]).contains("tls_certificate is not"))
    }
}
