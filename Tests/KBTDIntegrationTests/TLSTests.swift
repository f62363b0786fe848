import Foundation
import KBTDCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Native TLS and HTTP/2 on the real daemon, with certificates from a
/// throwaway openssl CA made in each test, and curl, openssl s_client and
/// Python's ssl module as the clients.
@Suite("TLS and HTTP/2 against the live daemon", .ownThreads, .timeLimit(.minutes(10)))
struct TLSTests {
    /// A daemon whose TCP listener speaks TLS with a fresh EC pair (and an RSA pair on request).
    static func tlsDaemon(keyType: String = "ec", environment: [String: String] = [:]) throws -> (TestDaemon, TestCertificates) {
        let daemon = TestDaemon()
        let pair = try TestCertificates.make(in: daemon.directory, name: "a", keyType: keyType)
        daemon.environment = ["KBTD_TLS_CERTIFICATE": pair.chain, "KBTD_TLS_KEY": pair.key].merging(environment) { $1 }
        try daemon.start()
        #expect(daemon.log_().contains("(TLS, HTTP/2)"))
        return (daemon, pair)
    }

    static func batchFile(_ daemon: TestDaemon, samples: [TestSample] = shows(20, height: 336)) throws -> String {
        let path = daemon.directory.appendingPathComponent("batch-\(UUID().uuidString).json.gz").path
        try Data(gzip(batchBody(samples: samples))).write(to: URL(fileURLWithPath: path))
        return path
    }

    static let post = ["-X", "POST", "-H", "Content-Type: application/json", "-H", "Content-Encoding: gzip"]

    @Test func aBatchAndAHeightOverHTTPSWithHTTP1() throws {
        let (daemon, pair) = try Self.tlsDaemon()
        let base = "https://127.0.0.1:\(daemon.port)"
        let batch = try curl(["--http1.1", "--cacert", pair.ca] + Self.post
            + ["--data-binary", "@" + (try Self.batchFile(daemon)), "-w", "\n%{http_code} %{http_version}", base + "/v1/batches"])
        #expect(batch.status == 0, "\(batch.stderr)")
        #expect(batch.stdout.hasSuffix("\n202 1.1"), "\(batch.stdout)")
        #expect(batch.stdout.contains("\"accepted\":20"))
        let height = try curl(["--http1.1", "--cacert", pair.ca, "-w", "\n%{http_code}",
                                     base + "/v1/height?model=iPhone17,1&language=en-US&os=26.1"])
        #expect(height.stdout.hasSuffix("\n200"), "\(height.stdout) \(height.stderr)")
        #expect(height.stdout.contains("\"basis\":\"model+os+language\""))
        // Without the CA, curl refuses the certificate: it really is the test CA's.
        let untrusted = try curl([base + "/healthz"])
        #expect(untrusted.status == 60, "curl exit \(untrusted.status): \(untrusted.stderr)")
        // Plain HTTP to the TLS port is not served.
        let plain = try curl(["http://127.0.0.1:\(daemon.port)/healthz"])
        #expect(plain.status != 0)
        // The Unix socket stays plain HTTP for local tools.
        let unix = try HTTPTestConnection(.unix(path: daemon.unixSocket)).request("GET", "/healthz")
        #expect(unix.status == 200)
    }

    /// One connection, ALPN h2, a batch then a height multiplexed on it, the same answers and limits as HTTP/1.1.
    @Test func http2ServesTheSameRoutesLimitsAndAnswers() throws {
        let (daemon, pair) = try Self.tlsDaemon(environment: ["KBTD_MAX_COMPRESSED_BYTES": "2048"])
        let base = "https://127.0.0.1:\(daemon.port)"
        let query = base + "/v1/height?model=iPhone17,1&language=en-US&os=26.1"
        let both = try curl(["--http2", "--cacert", pair.ca] + Self.post
            + ["--data-binary", "@" + (try Self.batchFile(daemon)), "-w", "\n%{http_code} %{http_version} %{num_connects}\n",
               base + "/v1/batches",
               "--next", "--http2", "--cacert", pair.ca, "-w", "\n%{http_code} %{http_version} %{num_connects}\n", query])
        #expect(both.status == 0, "\(both.stderr)")
        let lines = both.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("202 2 1"), "the batch over HTTP/2 on a new connection: \(both.stdout)")
        #expect(lines.contains("200 2 0"), "the height over HTTP/2 on the same connection: \(both.stdout)")
        let h2Height = try #require(lines.first { $0.hasPrefix("{\"height\"") })
        let h1Height = try curl(["--http1.1", "--cacert", pair.ca, query])
        #expect(h1Height.stdout == h2Height, "same bytes over both protocols")

        // Limits and errors: over 2048 bytes on the wire is 413, an unknown path 404, a wrong method 405, all JSON.
        let big = try Self.batchFile(daemon, samples: (0..<2000).map { TestSample(height: Double(200 + $0 % 1000)) })
        for version in ["--http2", "--http1.1"] {
            let tooBig = try curl([version, "--cacert", pair.ca] + Self.post
                + ["--data-binary", "@" + big, "-w", "\n%{http_code}", base + "/v1/batches"])
            #expect(tooBig.stdout.hasSuffix("\n413"), "\(version): \(tooBig.stdout)")
            let missing = try curl([version, "--cacert", pair.ca, "-w", "\n%{http_code}", base + "/nope"])
            #expect(missing.stdout.hasSuffix("\n404") && missing.stdout.contains("\"error\""), "\(version): \(missing.stdout)")
            let wrong = try curl([version, "--cacert", pair.ca, "-X", "DELETE", "-w", "\n%{http_code}", query])
            #expect(wrong.stdout.hasSuffix("\n405"), "\(version): \(wrong.stdout)")
        }
        // A client that offers only HTTP/1.1 by ALPN still gets it.
        let h1 = try curl(["--http1.1", "--cacert", pair.ca, "-o", "/dev/null", "-w", "%{http_version}", base + "/healthz"])
        #expect(h1.stdout == "1.1")
    }

    /// A height asked on an HTTP/2 stream is answered by the fast path (as HTTP/1.1's): the same
    /// status, headers and body as the router's answer over HTTP/1.1, 304 on a matching
    /// `If-None-Match`, counted once in the request and answer metrics and in
    /// `kbtd_fast_answers_total{protocol="h2"}`.
    @Test func http2StreamsGetTheFastPathsAnswers() throws {
        let (daemon, pair) = try Self.tlsDaemon()
        let base = "https://127.0.0.1:\(daemon.port)"
        #expect(try curl(["--http2", "--cacert", pair.ca] + Self.post + ["--data-binary", "@" + (try Self.batchFile(daemon)),
                                                                         base + "/v1/batches"]).status == 0)
        let query = base + "/v1/height?model=iPhone17,1&language=en-US&os=26.1"
        func headers(_ text: String) -> [String] {
            text.split(separator: "\r\n").map(String.init).filter { !$0.lowercased().hasPrefix("date:") && !$0.hasPrefix("HTTP/") }
        }
        let h2 = try curl(["--http2", "--cacert", pair.ca, "-D", "-", query])
        let h1 = try curl(["--http1.1", "--cacert", pair.ca, "-D", "-", query])
        #expect(h2.stdout.hasPrefix("HTTP/2 200"), "\(h2.stdout)")
        let h2Parts = h2.stdout.components(separatedBy: "\r\n\r\n"), h1Parts = h1.stdout.components(separatedBy: "\r\n\r\n")
        #expect(h2Parts.last == h1Parts.last, "same body")
        #expect(headers(h2Parts[0]).map { $0.lowercased() } == headers(h1Parts[0]).map { $0.lowercased() },
                "same header fields, in order: \(h2Parts[0]) vs \(h1Parts[0])")
        let etag = try #require(headers(h1Parts[0]).first { $0.lowercased().hasPrefix("etag:") }?.split(separator: " ").last)
        let notModified = try curl(["--http2", "--cacert", pair.ca, "-H", "If-None-Match: \(etag)", "-o", "/dev/null",
                                    "-w", "%{http_code} %{http_version}", query])
        #expect(notModified.stdout == "304 2")
        let metrics = try curl(["--http1.1", "--cacert", pair.ca, base + "/metrics"]).stdout
        #expect(metrics.contains("kbtd_fast_answers_total{protocol=\"h2\"} 2"), "two answers on h2 streams")
        #expect(metrics.contains("kbtd_http_requests_total{route=\"/v1/height\",status=\"304\"} 1"))
        #expect(metrics.contains("kbtd_http_requests_total{route=\"/v1/height\",status=\"200\"} 2"))
    }

    /// A phone's one-request h2 connection that ends with a TCP FIN (no close_notify, as most clients
    /// end): its answer arrives whole, and kbtd closes the socket without sealing a close_notify of its
    /// own after the client's end (nginx neither): the client reads end-of-stream, no alert record.
    @Test func anH2ConnectionEndedByTheClientIsClosedWithoutAnAlert() throws {
        let (daemon, pair) = try Self.tlsDaemon()
        let script = daemon.directory.appendingPathComponent("fin.py").path
        try Self.finScript.write(toFile: script, atomically: true, encoding: .utf8)
        let run = try spawnAndWait("/usr/bin/env", ["python3", script, String(daemon.port), pair.ca], timeout: 60)
        #expect(run.status == 0, "\(run.stderr)")
        let result = try JSONParser.parse(Array(run.stdout.utf8))
        #expect(result["status_ok"] == .bool(true), "\(run.stdout)")
        #expect(result["after_fin_bytes"] == .number(0), "bytes after the client's FIN (24: a close_notify record): \(run.stdout)")
    }

    /// h2 by hand (preface, empty SETTINGS, one HEADERS), then `shutdown(SHUT_WR)` on the TCP socket
    /// without close_notify (Python's `SSLSocket.shutdown` leaves TLS), then the raw bytes until EOF.
    static let finScript = #"""
import json, socket, ssl, struct, sys
port, ca = int(sys.argv[1]), sys.argv[2]
def connect(alpn):
    context = ssl.create_default_context(cafile=ca)
    context.check_hostname = False
    context.set_alpn_protocols([alpn])
    tls = context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=20))
    assert tls.selected_alpn_protocol() == alpn, tls.selected_alpn_protocol()
    return tls
def raw_until_eof(tls):
    data = b""
    while True:
        chunk = socket.socket.recv(tls, 4096)
        if not chunk:
            return data
        data += chunk
tls = connect("h2")
path, authority = b"/v1/heights?model=iPhone17,1", b"127.0.0.1"
block = b"\x82\x87" + bytes([0x04, len(path)]) + path + bytes([0x01, len(authority)]) + authority
tls.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
            + struct.pack(">I", len(block))[1:] + b"\x01\x05" + struct.pack(">I", 1) + block)
buffer, ok, done = b"", False, False
while not done:
    chunk = tls.recv(65536)
    if not chunk:
        break
    buffer += chunk
    while len(buffer) >= 9 and len(buffer) >= 9 + int.from_bytes(buffer[0:3], "big"):
        length = int.from_bytes(buffer[0:3], "big")
        kind, flags, stream = buffer[3], buffer[4], int.from_bytes(buffer[5:9], "big") & 0x7FFFFFFF
        payload, buffer = buffer[9:9 + length], buffer[9 + length:]
        if kind == 1 and stream == 1:
            ok = payload[:1] == b"\x88"
        if stream == 1 and kind in (0, 1) and flags & 1:
            done = True
tls.shutdown(socket.SHUT_WR)
after = raw_until_eof(tls)
tls.close()
print(json.dumps({"status_ok": ok and done, "after_fin_bytes": len(after)}))
"""#

    /// Many streams in flight on one h2 connection (curl --parallel), cached heights answered from the
    /// frames (`HTTP2FrameFront`) between streams the router serves: every answer right, the
    /// heights byte for byte the HTTP/1.1 answer, the 304s bodiless, each fast answer counted once.
    @Test func cachedAnswersAndRouterStreamsShareOneConnection() throws {
        let (daemon, pair) = try Self.tlsDaemon()
        let base = "https://127.0.0.1:\(daemon.port)"
        #expect(try curl(["--http1.1", "--cacert", pair.ca] + Self.post + ["--data-binary", "@" + (try Self.batchFile(daemon)),
                                                                           base + "/v1/batches"]).status == 0)
        let query = base + "/v1/heights?model=iPhone17,1"
        let h1 = try curl(["--http1.1", "--cacert", pair.ca, "-D", "-", query])
        let h1Body = try #require(h1.stdout.components(separatedBy: "\r\n\r\n").last)
        let etag = try #require(h1.stdout.split(separator: "\r\n").first { $0.lowercased().hasPrefix("etag:") }?
            .split(separator: " ").last.map(String.init))
        enum Kind { case height, revalidation, health }
        let kinds: [Kind] = (0..<48).map { [.health, .revalidation, .height, .height][$0 % 4] }
        let directory = daemon.directory.appendingPathComponent("streams").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let blocks = kinds.enumerated().map { index, kind in
            let url = kind == .health ? base + "/healthz" : query
            let quoted = etag.replacingOccurrences(of: "\"", with: "\\\"")
            let revalidate = kind == .revalidation ? "header = \"If-None-Match: \(quoted)\"\n" : ""
            return "url = \"\(url)\"\nhttp2\ncacert = \"\(pair.ca)\"\n\(revalidate)output = \"\(directory)/\(index)\"\n"
                + "write-out = \"\(index) %{http_code} %{http_version}\\n\"\n"
        }
        let config = directory + "/config"
        try blocks.joined(separator: "next\n").write(toFile: config, atomically: true, encoding: .utf8)
        let run = try curl(["--parallel", "--parallel-max", "16", "-K", config])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        #expect(lines.count == kinds.count, "\(run.stdout)")
        for line in lines where line.count == 3 {
            guard let index = Int(line[0]), kinds.indices.contains(index) else {
                Issue.record("unexpected line \(line)")
                continue
            }
            let body = (try? String(contentsOfFile: "\(directory)/\(index)", encoding: .utf8)) ?? ""
            #expect(line[2] == "2", "transfer \(index) over HTTP/\(line[2])")
            switch kinds[index] {
            case .height: #expect(line[1] == "200" && body == h1Body, "transfer \(index): \(line[1]) \(body.prefix(80))")
            case .revalidation: #expect(line[1] == "304" && body.isEmpty, "transfer \(index): \(line[1]) \(body.prefix(80))")
            case .health: #expect(line[1] == "200" && body.contains("ok"), "transfer \(index): \(line[1]) \(body.prefix(80))")
            }
        }
        let metrics = try curl(["--http1.1", "--cacert", pair.ca, base + "/metrics"]).stdout
        let fast = kinds.filter { $0 != .health }.count
        #expect(metrics.contains("kbtd_fast_answers_total{protocol=\"h2\"} \(fast)\n"), "each fast answer counted once")
        #expect(metrics.contains("kbtd_http_requests_total{route=\"/v1/heights\",status=\"304\"} \(kinds.count / 4)\n"))
    }

    /// TLS 1.2+ only, forward-secret AEAD suites only; the same client tool succeeds with a good suite.
    @Test func onlyModernProtocolVersionsAndCiphers() throws {
        let (daemon, pair) = try Self.tlsDaemon(keyType: "rsa")
        func handshake(_ options: String) throws -> CommandResult {
            try spawnAndWait("/bin/sh", ["-c", "openssl s_client -connect 127.0.0.1:\(daemon.port) -CAfile \(pair.ca) "
                + "-verify_return_error \(options) </dev/null"], timeout: 30)
        }
        let good = try handshake("-tls1_2 -cipher ECDHE-RSA-AES128-GCM-SHA256")
        #expect(good.status == 0, "\(good.stdout) \(good.stderr)")
        let tls13 = try handshake("-tls1_3")
        #expect(tls13.status == 0 && tls13.stdout.contains("TLSv1.3"), "\(tls13.stderr)")
        // The client is told it may use weak settings (SECLEVEL=0); refusing them is the server's doing.
        let tls11 = try handshake("-tls1_1 -cipher DEFAULT@SECLEVEL=0")
        #expect(tls11.status != 0, "TLS 1.1 was accepted: \(tls11.stdout)")
        let staticRSA = try handshake("-tls1_2 -cipher AES128-GCM-SHA256")
        #expect(staticRSA.status != 0, "a suite without forward secrecy was accepted")
        let cbc = try handshake("-tls1_2 -cipher ECDHE-RSA-AES128-SHA")
        #expect(cbc.status != 0, "a CBC suite was accepted")
    }

    /// `tls_groups` decides the key exchange: by default a client offering only X25519 gets it (the
    /// hybrid X25519MLKEM768 is listed first, which openssl 3.0 does not offer); a list without X25519
    /// refuses that client and serves one offering P-256; a reload with other groups applies them to
    /// new connections. A group kbtd does not know is refused by name.
    @Test func tlsGroupsDecideTheKeyExchange() throws {
        func handshake(_ port: Int, _ ca: String, groups: String) throws -> CommandResult {
            try spawnAndWait("/bin/sh", ["-c", "openssl s_client -connect 127.0.0.1:\(port) -CAfile \(ca) "
                + "-verify_return_error -tls1_3 -groups \(groups) </dev/null"], timeout: 30)
        }
        let (plain, plainPair) = try Self.tlsDaemon()
        let byDefault = try handshake(plain.port, plainPair.ca, groups: "X25519")
        #expect(byDefault.status == 0 && byDefault.stdout.contains("Server Temp Key: X25519"), "\(byDefault.stdout) \(byDefault.stderr)")
        #expect(plain.stop() == 0)

        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("kbtd.conf").path
        try "tls_groups = P-256\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = TestDaemon(extraArguments: ["--config", config])
        let pair = try TestCertificates.make(in: daemon.directory, name: "a", keyType: "ec")
        daemon.environment = ["KBTD_TLS_CERTIFICATE": pair.chain, "KBTD_TLS_KEY": pair.key]
        try daemon.start()
        defer { #expect(daemon.stop() == 0) }
        let refused = try handshake(daemon.port, pair.ca, groups: "X25519")
        #expect(refused.status != 0, "X25519 was taken with tls_groups = P-256: \(refused.stdout)")
        let p256 = try handshake(daemon.port, pair.ca, groups: "X25519:P-256")
        #expect(p256.status == 0 && p256.stdout.contains("Server Temp Key: ECDH, prime256v1"), "\(p256.stdout) \(p256.stderr)")

        try "tls_groups = X25519:P-384\n".write(toFile: config, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        #expect(daemon.waitForLog("TLS certificate re-read"), "changed groups make a new context: \(daemon.log_())")
        #expect(daemon.waitForLog("configuration reloaded"))
        let reloaded = try handshake(daemon.port, pair.ca, groups: "X25519:P-256")
        #expect(reloaded.status == 0 && reloaded.stdout.contains("Server Temp Key: X25519"), "\(reloaded.stdout)")

        try "tls_groups = X25519, P-255\n".write(toFile: config, atomically: true, encoding: .utf8)
        let unknown = try runKBTD(["serve", "--config", config, "--database", directory.appendingPathComponent("x.sqlite").path])
        #expect(unknown.status == 78 && unknown.stderr.contains("tls_groups") && unknown.stderr.contains("'P-255' is not a group"),
                "\(unknown.stderr)")
    }

    /// certbot renews in place and reloads: a new connection sees the new certificate, one already open keeps working.
    @Test func sighupSwapsTheCertificateWithoutDroppingConnections() throws {
        let (daemon, pair) = try Self.tlsDaemon()
        let renewed = try TestCertificates.make(in: daemon.directory, name: "b", keyType: "rsa")
        let script = daemon.directory.appendingPathComponent("swap.py").path
        try Self.swapScript.write(toFile: script, atomically: true, encoding: .utf8)
        let pid = try #require(daemon.process?.processIdentifier)
        // The script sends SIGHUP, then blocks on this FIFO until the daemon has logged that it re-read the pair.
        let go = daemon.directory.appendingPathComponent("go.fifo").path
        #expect(mkfifo(go, 0o600) == 0)
        // Held open (read and write, which never blocks) until the script is done: its open does not wait,
        // and the byte written below stays in the FIFO whenever the script gets to read it.
        let fifo = open(go, O_RDWR)
        defer { close(fifo) }
        let out = daemon.directory.appendingPathComponent("swap.out").path, err = daemon.directory.appendingPathComponent("swap.err").path
        let swap = try SpawnedProcess("/usr/bin/python3", [script, String(daemon.port), pair.ca, renewed.ca, String(pid),
                                                           renewed.chain, renewed.key, pair.chain, pair.key, go], stdout: out, stderr: err)
        let reread = daemon.waitForLog("TLS certificate re-read")
        var byte: UInt8 = 1
        _ = write(fifo, &byte, 1)
        let status = swap.wait(seconds: 60)
        let stdout = (try? String(contentsOfFile: out, encoding: .utf8)) ?? "", stderr = (try? String(contentsOfFile: err, encoding: .utf8)) ?? ""
        #expect(reread, "the daemon did not log re-reading the pair:\n\(daemon.log_())")
        #expect(status == 0, "\(stderr)")
        let run = (stdout: stdout, stderr: stderr)
        let result = try JSONParser.parse(Array(run.stdout.utf8))
        #expect(result["old_before"] == .number(200))
        #expect(result["new_with_renewed_ca"] == .number(200), "\(run.stdout)")
        #expect(result["old_after"] == .number(200), "the open connection keeps working: \(run.stdout)")
        #expect(result["same_socket"] == .bool(true))
        #expect(result["new_with_old_ca_rejected"] == .bool(true))
        #expect(daemon.log_().contains("TLS certificate re-read"))

        // A broken pair on reload: the running certificate stays and the log names the file.
        try "not a key".write(toFile: pair.key, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        #expect(daemon.waitForLog("configuration reload failed"))
        #expect(daemon.log_().contains(pair.key))
        let still = try curl(["--cacert", renewed.ca, "-w", "%{http_code}", "-o", "/dev/null",
                                    "https://127.0.0.1:\(daemon.port)/healthz"])
        #expect(still.stdout == "200", "\(still.stderr)")
    }

    /// A missing file, a key that is not the certificate's, half a pair, tls on a listener without a pair: exit 78, file named.
    @Test func anUnusablePairStopsTheDaemonWithExit78NamingTheFile() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let a = try TestCertificates.make(in: directory, name: "a")
        let b = try TestCertificates.make(in: directory, name: "b")
        let missing = directory.appendingPathComponent("missing.pem").path
        let notPEM = directory.appendingPathComponent("garbage.pem").path
        try "hello".write(toFile: notPEM, atomically: true, encoding: .utf8)
        let cases: [([String], String)] = [
            (["--tls-certificate", missing, "--tls-key", a.key], missing),
            (["--tls-certificate", a.chain, "--tls-key", b.key], b.key),
            (["--tls-certificate", notPEM, "--tls-key", a.key], notPEM),
            (["--tls-certificate", a.chain, "--tls-key", notPEM], notPEM),
            (["--tls-certificate", a.chain], "tls_key"),
            (["--listen", "127.0.0.1:0 tls"], "tls_certificate"),
        ]
        for (flags, named) in cases {
            let config = directory.appendingPathComponent("kbtd-\(UUID().uuidString).conf").path
            var lines: [String] = []
            var index = 0
            while index + 1 < flags.count {
                lines.append("\(flags[index].dropFirst(2).replacingOccurrences(of: "-", with: "_")) = \(flags[index + 1])")
                index += 2
            }
            try lines.joined(separator: "\n").write(toFile: config, atomically: true, encoding: .utf8)
            let result = try spawnAndWait(TestPaths.kbtdBinary, ["serve", "--config", config, "--database",
                                                                     directory.appendingPathComponent("kbtd.sqlite").path], timeout: 30)
            #expect(result.status == 78, "\(lines): exit \(result.status) \(result.stderr)")
            #expect(result.stderr.contains(named), "\(lines): \(result.stderr)")
        }
    }

    /// systemd passes a bound TCP socket; kbtd speaks TLS on it when the pair is set.
    @Test func socketActivationServesTLSOnTheAdoptedSocket() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let pair = try TestCertificates.make(in: directory, name: "a")
        let activator = try SocketActivator(directory: directory, options: ["--fdname=https", "-E", "KBTD_TLS_CERTIFICATE", "-E", "KBTD_TLS_KEY"],
                                            command: [TestPaths.kbtdBinary, "serve", "--database", directory.appendingPathComponent("kbtd.sqlite").path],
                                            environment: ["KBTD_TLS_CERTIFICATE": pair.chain, "KBTD_TLS_KEY": pair.key])
        let port = activator.port
        let health = try curl(["--cacert", pair.ca, "--retry", "3", "--retry-connrefused", "-w", "\n%{http_code} %{http_version}",
                                     "--http2", "https://127.0.0.1:\(port)/healthz"])
        #expect(health.stdout.hasSuffix("\n200 2"), "\(health.stdout) \(health.stderr)")
        let text = activator.text
        #expect(text.contains("(fd 3, https) (TLS, HTTP/2)"), "\(text)")
        #expect(activator.stop() == 0)
    }

    /// Opens a keep-alive HTTPS connection, renews the pair in place, sends SIGHUP, waits for a new
    /// connection to present the renewed certificate, then uses the old connection again.
    static let swapScript = #"""
    import http.client, json, os, shutil, signal, ssl, sys
    port, old_ca, new_ca, pid = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    new_chain, new_key, live_chain, live_key, go = sys.argv[5:10]

    def connection(ca):
        return http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=ssl.create_default_context(cafile=ca))

    def get(conn):
        conn.request("GET", "/healthz")
        response = conn.getresponse()
        response.read()
        return response.status

    result = {}
    old = connection(old_ca)
    result["old_before"] = get(old)
    socket_before = old.sock
    shutil.copyfile(new_chain, live_chain)
    shutil.copyfile(new_key, live_key)
    os.kill(pid, signal.SIGHUP)
    # Blocks until the test, having seen the daemon log that it re-read the pair, opens the FIFO.
    os.read(os.open(go, os.O_RDONLY), 1)
    result["new_with_renewed_ca"] = get(connection(new_ca))
    result["old_after"] = get(old)
    result["same_socket"] = old.sock is socket_before
    try:
        get(connection(old_ca))
        result["new_with_old_ca_rejected"] = False
    except ssl.SSLCertVerificationError:
        result["new_with_old_ca_rejected"] = True
    print(json.dumps(result))
    """#
}
