import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A phone's second launch skips the full handshake: kbtd's TLS context issues session tickets,
/// and keeps them valid across a SIGHUP that leaves the pair unchanged. `openssl s_client` saves
/// the session of one connection (`-sess_out`) and offers it on the next (`-sess_in`).
@Suite("TLS session resumption against the live daemon", .ownThreads)
struct TLSResumptionTests {
    /// One GET over TLS with `openssl s_client`, read to the end (so the server's session tickets,
    /// sent after the handshake, arrive before the session is saved).
    static func connect(_ port: Int, ca: String, version: String, save: String? = nil, offer: String? = nil,
                        extra: String = "") throws -> CommandResult {
        var options = "-connect 127.0.0.1:\(port) -CAfile \(ca) -verify_return_error -\(version) -ign_eof \(extra)"
        if let save { options += " -sess_out \(save)" }
        if let offer { options += " -sess_in \(offer)" }
        let request = #"printf 'GET /healthz HTTP/1.1\r\nHost: kbtd.test\r\nConnection: close\r\n\r\n'"#
        return try spawnAndWait("/bin/sh", ["-c", "\(request) | openssl s_client \(options)"], timeout: 30)
    }

    /// s_client's summary line: `New, TLSv1.3, Cipher is ...` or `Reused, TLSv1.3, Cipher is ...`.
    static func summary(_ result: CommandResult) -> String {
        result.stdout.split(separator: "\n").first { $0.hasPrefix("New, ") || $0.hasPrefix("Reused, ") }.map(String.init) ?? ""
    }

    @Test(arguments: ["tls1_3", "tls1_2"])
    func aSecondConnectionResumesTheSessionEvenAfterAReload(_ version: String) throws {
        let (daemon, pair) = try TLSTests.tlsDaemon()
        defer { #expect(daemon.stop() == 0) }
        let session = daemon.directory.appendingPathComponent("session-\(version).pem").path
        let first = try Self.connect(daemon.port, ca: pair.ca, version: version, save: session)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(Self.summary(first).hasPrefix("New, "), "\(first.stdout)")
        #expect(first.stdout.contains("HTTP/1.1 200"), "the request was answered: \(first.stdout)")
        #expect(FileManager.default.fileExists(atPath: session), "s_client saved no session: no ticket was issued")

        let second = try Self.connect(daemon.port, ca: pair.ca, version: version, offer: session)
        #expect(Self.summary(second).hasPrefix("Reused, "), "the second connection did a full handshake: \(second.stdout)")
        #expect(second.stdout.contains("HTTP/1.1 200"))

        // A reload with the pair unchanged keeps the context, and with it the ticket keys.
        daemon.signal(SIGHUP)
        #expect(daemon.waitForLog("configuration reloaded"))
        #expect(daemon.log_().contains("TLS certificate unchanged"))
        let afterReload = try Self.connect(daemon.port, ca: pair.ca, version: version, offer: session)
        #expect(Self.summary(afterReload).hasPrefix("Reused, "), "a reload broke resumption: \(afterReload.stdout)")

        // A renewed pair is a new context: the new certificate is presented, in a full handshake.
        let renewed = try TestCertificates.make(in: daemon.directory, name: "renewed")
        try FileManager.default.removeItem(atPath: pair.chain)
        try FileManager.default.copyItem(atPath: renewed.chain, toPath: pair.chain)
        try FileManager.default.removeItem(atPath: pair.key)
        try FileManager.default.copyItem(atPath: renewed.key, toPath: pair.key)
        daemon.signal(SIGHUP)
        #expect(daemon.waitForLog("TLS certificate re-read"))
        #expect(daemon.waitForLog("configuration reloaded", occurrences: 2))
        let renewedSession = try Self.connect(daemon.port, ca: renewed.ca, version: version, offer: session)
        #expect(renewedSession.status == 0, "\(renewedSession.stderr)")
        #expect(Self.summary(renewedSession).hasPrefix("New, "), "\(renewedSession.stdout)")
    }

    /// NewSessionTicket messages the server sent (`s_client -msg` prints one `<<< ... NewSessionTicket` line each).
    static func tickets(_ result: CommandResult) -> Int {
        result.stdout.split(separator: "\n").filter { $0.hasPrefix("<<< ") && $0.hasSuffix("NewSessionTicket") }.count
    }

    /// The negotiated suite from the summary line (`..., Cipher is TLS_AES_128_GCM_SHA256`).
    static func cipher(_ result: CommandResult) -> String {
        summary(result).components(separatedBy: "Cipher is ").last ?? ""
    }

    /// One ticket after a full handshake and one after a resumption (BoringSSL's default is two
    /// after each; OpenSSL, as nginx, sends one after a resumption), and AES-128-GCM chosen over
    /// AES-256-GCM when the client lists AES-256-GCM first, as OpenSSL's clients do by default.
    @Test func oneTicketPerHandshakeAndAES128GCMFirst() throws {
        let (daemon, pair) = try TLSTests.tlsDaemon()
        defer { #expect(daemon.stop() == 0) }
        #expect(!daemon.log_().contains("BoringSSL's default"), "the TLS context was not tuned: \(daemon.log_())")
        let session = daemon.directory.appendingPathComponent("session-tickets.pem").path
        let openSSLOrder = "-msg -ciphersuites TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256"
        let first = try Self.connect(daemon.port, ca: pair.ca, version: "tls1_3", save: session, extra: openSSLOrder)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(Self.summary(first).hasPrefix("New, "), "\(first.stdout)")
        #expect(first.stdout.contains("HTTP/1.1 200"), "the request was answered: \(first.stdout)")
        // Without AES instructions kbtd keeps BoringSSL's order (ChaCha20 first).
        let expected = hasAESInstructions ? "TLS_AES_128_GCM_SHA256" : "TLS_CHACHA20_POLY1305_SHA256"
        #expect(Self.cipher(first) == expected, "\(Self.summary(first))")
        #expect(Self.tickets(first) == 1, "tickets after a full handshake: \(first.stdout)")

        let resumed = try Self.connect(daemon.port, ca: pair.ca, version: "tls1_3", offer: session, extra: openSSLOrder)
        #expect(Self.summary(resumed).hasPrefix("Reused, "), "the second connection did a full handshake: \(resumed.stdout)")
        #expect(resumed.stdout.contains("HTTP/1.1 200"))
        #expect(Self.cipher(resumed) == expected, "\(Self.summary(resumed))")
        #expect(Self.tickets(resumed) == 1, "tickets after a resumption: \(resumed.stdout)")
    }

    /// The order is AES-128-GCM first, except for a client that puts ChaCha20-Poly1305 first (one
    /// without AES instructions says so); a client offering only AES-256-GCM still gets it.
    @Test(.enabled(if: hasAESInstructions, "kbtd keeps BoringSSL's ChaCha20-first order without AES instructions"), arguments: [
        ("TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"),
        ("TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_GCM_SHA256"),
        ("TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_256_GCM_SHA384"),
        ("TLS_AES_256_GCM_SHA384", "TLS_AES_256_GCM_SHA384"),
    ])
    func theTLS13SuiteFollowsTheServersOrder(_ offered: String, _ expected: String) throws {
        let (daemon, pair) = try TLSTests.tlsDaemon()
        defer { #expect(daemon.stop() == 0) }
        let result = try Self.connect(daemon.port, ca: pair.ca, version: "tls1_3", extra: "-ciphersuites \(offered)")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("HTTP/1.1 200"), "\(result.stdout)")
        #expect(Self.cipher(result) == expected, "offered \(offered): \(Self.summary(result))")
    }
}

/// Whether this CPU has AES instructions (x86's `aes` flag, ARM's `aes` feature), where kbtd puts AES-128-GCM first.
private let hasAESInstructions = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
    .split(separator: "\n").contains { ($0.hasPrefix("flags") || $0.hasPrefix("Features")) && $0.split(separator: " ").contains("aes") } ?? false
