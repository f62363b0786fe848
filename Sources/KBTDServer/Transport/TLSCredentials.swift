import Foundation
import NIOSSL
import Synchronization

/// The server's certificate chain and key (`tls_certificate`, `tls_key`),
/// turned into the TLS context every new TLS connection starts from.
///
/// TLS 1.2 and 1.3 only; on TLS 1.2 only forward-secret AEAD suites (ECDHE
/// with AES-GCM or ChaCha20-Poly1305), what Mozilla's "intermediate" profile
/// and Apple's App Transport Security accept. ALPN offers `h2` first, then
/// `http/1.1`. The key exchange uses `tls_groups` (by default the post-quantum hybrid X25519MLKEM768
/// first, as swift-nio-ssl offers). The crypto is BoringSSL through swift-nio-ssl.
enum TLSCredentials {
    /// TLS 1.2 suites; TLS 1.3 has only AEAD suites and BoringSSL does not let them be narrowed.
    static let cipherSuites = [
        "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256",
        "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384",
        "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
    ].joined(separator: ":")

    /// The pair as read: the files' bytes, what a reload compares to decide whether anything changed.
    struct Pair: Equatable {
        var chain: [UInt8]
        var key: [UInt8]
    }

    /// Reads the PEM pair; errors name the file at fault.
    static func read(certificate: String, key: String) throws(SettingsError) -> Pair {
        var bytes: [[UInt8]] = []
        for (setting, path) in [("tls_certificate", certificate), ("tls_key", key)] {
            guard FileManager.default.isReadableFile(atPath: path), let data = FileManager.default.contents(atPath: path) else {
                let reason = FileManager.default.fileExists(atPath: path) ? "is not readable by this user" : "does not exist"
                throw SettingsError(message: "\(setting): \(path) \(reason)")
            }
            bytes.append(Array(data))
        }
        return Pair(chain: bytes[0], key: bytes[1])
    }

    /// Reads the PEM pair and builds a context. Errors name the file (and key) at fault,
    /// so `kbtd serve` exits 78 and a SIGHUP reload logs what to fix.
    static func context(certificate: String, key: String, groups: [TLSGroup]) throws(SettingsError) -> NIOSSLContext {
        try context(read(certificate: certificate, key: key), certificate: certificate, key: key, groups: groups)
    }

    /// Builds a context from a pair already read (`certificate` and `key` name its files in errors).
    static func context(_ pair: Pair, certificate: String, key: String, groups: [TLSGroup]) throws(SettingsError) -> NIOSSLContext {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMBytes(pair.chain)
        } catch {
            throw SettingsError(message: "tls_certificate: \(certificate) is not a PEM certificate chain (\(error))")
        }
        guard !chain.isEmpty else {
            throw SettingsError(message: "tls_certificate: \(certificate) holds no PEM certificate")
        }
        let privateKey: NIOSSLPrivateKey
        do {
            privateKey = try NIOSSLPrivateKey(bytes: pair.key, format: .pem)
        } catch {
            throw SettingsError(message: "tls_key: \(key) is not an unencrypted PEM private key (\(error))")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(privateKey))
        configuration.minimumTLSVersion = .tlsv12
        configuration.cipherSuites = cipherSuites
        configuration.applicationProtocols = ["h2", "http/1.1"]
        configuration.curves = groups.map(\.curve)
        let context: NIOSSLContext
        do {
            // BoringSSL checks the key against the chain's first certificate here.
            context = try NIOSSLContext(configuration: configuration)
        } catch {
            throw SettingsError(message: "tls_key: \(key) does not match the first certificate of tls_certificate \(certificate) (\(error))")
        }
        return context
    }
}

extension TLSGroup {
    var curve: NIOTLSCurve {
        switch self {
        case .x25519MLKEM768: .x25519_MLKEM768
        case .x25519: .x25519
        case .p256: .secp256r1
        case .p384: .secp384r1
        case .p521: .secp521r1
        }
    }
}

/// The TLS context new connections use. One context serves every connection for as long as the
/// pair is unchanged: BoringSSL keeps its session cache and its session-ticket keys in the
/// context (`SSL_CTX`), so a phone's second launch resumes the session (no certificate, no
/// signature) even across SIGHUP reloads. BoringSSL makes those ticket keys itself and rotates
/// them every two days, still accepting tickets of the previous key for two more, so rotation
/// breaks no live session; swift-nio-ssl 2.37 offers no way to set or share ticket keys.
///
/// Each context runs on BoringSSL's own settings (two tickets a TLS 1.3 handshake, the client's
/// order between the AES suites): swift-nio-ssl offers no public setting for either.
///
/// A renewed pair (certbot-style) or changed `tls_groups` get a new context on SIGHUP: new connections present the new
/// certificate, connections already open keep theirs, and tickets of the old context no longer
/// resume (one full handshake per client after a renewal).
final class TLSContextBox: Sendable {
    /// What a context is built from: the files' bytes and the groups.
    private struct Source: Equatable {
        var pair: TLSCredentials.Pair
        var groups: [TLSGroup]
    }

    private let state: Mutex<(context: NIOSSLContext, source: Source)>

    /// Reads the pair and builds its context (a SettingsError names the file: exit 78).
    init(certificate: String, key: String, groups: [TLSGroup]) throws(SettingsError) {
        let pair = try TLSCredentials.read(certificate: certificate, key: key)
        let context = try TLSCredentials.context(pair, certificate: certificate, key: key, groups: groups)
        state = Mutex((context, Source(pair: pair, groups: groups)))
    }

    var current: NIOSSLContext { state.withLock { $0.context } }

    /// Re-reads the pair; on failure the running context stays and the error names the file.
    /// Returns false when the files hold the pair already running and the groups are the same: the
    /// context (and with it the sessions clients may resume) stays.
    @discardableResult
    func reload(certificate: String, key: String, groups: [TLSGroup]) throws(SettingsError) -> Bool {
        let source = Source(pair: try TLSCredentials.read(certificate: certificate, key: key), groups: groups)
        if state.withLock({ $0.source == source }) { return false }
        let fresh = try TLSCredentials.context(source.pair, certificate: certificate, key: key, groups: groups)
        state.withLock { $0 = (fresh, source) }
        return true
    }
}
