import Foundation
import NIOSSL
import Synchronization

/// The server's certificate chain and key (`tls_certificate`, `tls_key`),
/// turned into the TLS context every new TLS connection starts from.
///
/// TLS 1.2 and 1.3 only; on TLS 1.2 only forward-secret AEAD suites (ECDHE
/// with AES-GCM or ChaCha20-Poly1305), what Mozilla's "intermediate" profile
/// and Apple's App Transport Security accept. ALPN offers `h2` first, then
/// `http/1.1`. The crypto is BoringSSL through swift-nio-ssl.
enum TLSCredentials {
    /// TLS 1.2 suites; TLS 1.3 has only AEAD suites and BoringSSL does not let them be narrowed.
    static let cipherSuites = [
        "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256",
        "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-RSA-AES256-GCM-SHA384",
        "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
    ].joined(separator: ":")

    /// Reads the PEM pair and builds a context. Errors name the file (and key) at fault,
    /// so `kbtd serve` exits 78 and a SIGHUP reload logs what to fix.
    static func context(certificate: String, key: String) throws(SettingsError) -> NIOSSLContext {
        for (setting, path) in [("tls_certificate", certificate), ("tls_key", key)] {
            guard FileManager.default.isReadableFile(atPath: path) else {
                let reason = FileManager.default.fileExists(atPath: path) ? "is not readable by this user" : "does not exist"
                throw SettingsError(message: "\(setting): \(path) \(reason)")
            }
        }
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificate)
        } catch {
            throw SettingsError(message: "tls_certificate: \(certificate) is not a PEM certificate chain (\(error))")
        }
        guard !chain.isEmpty else {
            throw SettingsError(message: "tls_certificate: \(certificate) holds no PEM certificate")
        }
        let privateKey: NIOSSLPrivateKey
        do {
            privateKey = try NIOSSLPrivateKey(file: key, format: .pem)
        } catch {
            throw SettingsError(message: "tls_key: \(key) is not an unencrypted PEM private key (\(error))")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(privateKey))
        configuration.minimumTLSVersion = .tlsv12
        configuration.cipherSuites = cipherSuites
        configuration.applicationProtocols = ["h2", "http/1.1"]
        do {
            // BoringSSL checks the key against the chain's first certificate here.
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw SettingsError(message: "tls_key: \(key) does not match the first certificate of tls_certificate \(certificate) (\(error))")
        }
    }
}

/// The TLS context new connections use, replaced on SIGHUP (certbot-style
/// renewals): connections already open keep the one they started with.
final class TLSContextBox: Sendable {
    private let context: Mutex<NIOSSLContext>

    init(_ context: NIOSSLContext) {
        self.context = Mutex(context)
    }

    var current: NIOSSLContext { context.withLock { $0 } }

    /// Re-reads the pair; on failure the running context stays and the error names the file.
    func reload(certificate: String, key: String) throws(SettingsError) {
        let fresh = try TLSCredentials.context(certificate: certificate, key: key)
        context.withLock { $0 = fresh }
    }
}
