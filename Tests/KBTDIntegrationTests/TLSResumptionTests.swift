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
}
