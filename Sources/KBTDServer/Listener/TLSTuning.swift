import CNIOBoringSSL
import NIOSSL

/// What kbtd sets on BoringSSL's `SSL_CTX` beyond what swift-nio-ssl's `TLSConfiguration` offers:
///
/// - **One session ticket per handshake** (`SSL_CTX_set_num_tickets`): BoringSSL sends two after
///   every TLS 1.3 handshake, resumptions included; OpenSSL (nginx) sends two after a full
///   handshake and one after a resumption. A phone resumes with one ticket and gets a fresh one
///   each time, so the second is work (a ticket sealed and a record written) nobody uses.
/// - **AES-128-GCM first in TLS 1.3** when the server has AES instructions: BoringSSL otherwise
///   follows the client's order between the AES suites, and OpenSSL's clients (Python, curl, most
///   tools) ask for AES-256-GCM first, whose SHA-384 transcript and key schedule BoringSSL runs in
///   generic code on CPUs without its Intel-only AVX path. The order is AES-128-GCM, then
///   AES-256-GCM or ChaCha20-Poly1305 as the client prefers; a client whose first TLS 1.3 suite is
///   ChaCha20-Poly1305 (a BoringSSL or Go client without AES instructions says so) gets it, by the
///   early callback below (OpenSSL's `SSL_OP_PRIORITIZE_CHACHA`). iPhones ask for AES-128-GCM first.
///
/// swift-nio-ssl 2.37.6 keeps its `SSL_CTX` in a private stored property (`NIOSSLContext.sslContext`)
/// and has no public hook to it. kbtd reads it by reflection and checks it really is that context's
/// `SSL_CTX` (swift-nio-ssl stores the `NIOSSLContext` as the `SSL_CTX`'s app data, ex-data index 0)
/// before touching it; the package is pinned to the exact version. When the check fails (a
/// swift-nio-ssl whose layout changed), nothing is set, the daemon logs an error naming it, and
/// TLSTuningTests fails: TLS still works, with BoringSSL's defaults.
enum TLSTuning {
    /// Tickets sent after each TLS 1.3 handshake, full or resumed.
    static let ticketsPerHandshake = 1

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The `SSL_CTX` of `context`, checked to be its own.
    static func sslContext(of context: NIOSSLContext) throws(Failure) -> OpaquePointer {
        let stored = Mirror(reflecting: context).children.first { $0.label == "sslContext" }?.value
        guard let pointer = stored as? OpaquePointer else {
            throw Failure(description: "swift-nio-ssl's NIOSSLContext has no stored `sslContext: OpaquePointer` (a version other than 2.37.6?)")
        }
        guard SSL_CTX_get_ex_data(pointer, 0) == Unmanaged.passUnretained(context).toOpaque() else {
            throw Failure(description: "NIOSSLContext.sslContext is not an SSL_CTX whose app data is that context (a version other than 2.37.6?)")
        }
        return pointer
    }

    /// The tickets `context`'s `SSL_CTX` sends after each TLS 1.3 handshake (BoringSSL's default is 2).
    static func ticketsPerHandshake(of context: NIOSSLContext) throws(Failure) -> Int {
        SSL_CTX_get_num_tickets(try sslContext(of: context))
    }

    /// Sets the ticket count and the TLS 1.3 suite order on `context`'s `SSL_CTX`. Called once, when
    /// the context is made and before any connection uses it.
    static func apply(to context: NIOSSLContext) throws(Failure) {
        let ctx = try sslContext(of: context)
        guard SSL_CTX_set_num_tickets(ctx, ticketsPerHandshake) == 1, SSL_CTX_get_num_tickets(ctx) == ticketsPerHandshake else {
            throw Failure(description: "SSL_CTX_set_num_tickets(\(ticketsPerHandshake)) was not taken")
        }
        // Without AES instructions BoringSSL's own default (ChaCha20 first) is the right one.
        guard EVP_has_aes_hardware() == 1 else { return }
        let flags: [UInt32] = [0, UInt32(SSL_CIPHER_FLAG_EQUAL_PREFERENCE_WITH_NEXT), 0]
        guard SSL_CTX_set1_tls13_ciphers(ctx, aesFirst, flags, aesFirst.count) == 1 else {
            throw Failure(description: "SSL_CTX_set1_tls13_ciphers refused the AES-128-GCM-first order")
        }
        SSL_CTX_set_select_certificate_cb(ctx, honourChaChaFirst)
    }

    static let aes128 = UInt16(SSL_CIPHER_AES_128_GCM_SHA256)
    static let aes256 = UInt16(SSL_CIPHER_AES_256_GCM_SHA384)
    static let chacha = UInt16(SSL_CIPHER_CHACHA20_POLY1305_SHA256)
    /// The context's order: AES-128-GCM, then (AES-256-GCM | ChaCha20-Poly1305) as the client prefers.
    static let aesFirst = [aes128, aes256, chacha]
    /// A ChaCha20-first client's connection: its first choice, then AES-128-GCM, then AES-256-GCM.
    static let chachaFirst = [chacha, aes128, aes256]

    /// The client's first TLS 1.3 suite that BoringSSL knows (GREASE and others skipped), from the
    /// ClientHello's cipher_suites bytes (big-endian pairs).
    static func firstTLS13Suite(_ suites: UnsafeBufferPointer<UInt8>) -> UInt16? {
        var index = 0
        while index + 1 < suites.count {
            let suite = UInt16(suites[index]) << 8 | UInt16(suites[index + 1])
            if suite == aes128 || suite == aes256 || suite == chacha { return suite }
            index += 2
        }
        return nil
    }
}

/// BoringSSL's early callback (every ClientHello, before the TLS 1.3 suite is chosen): a client that
/// puts ChaCha20-Poly1305 first gets it on this connection. Never fails a handshake.
private func honourChaChaFirst(_ pointer: UnsafePointer<SSL_CLIENT_HELLO>?) -> ssl_select_cert_result_t {
    guard let hello = pointer?.pointee, let suites = hello.cipher_suites else { return ssl_select_cert_success }
    if TLSTuning.firstTLS13Suite(UnsafeBufferPointer(start: suites, count: hello.cipher_suites_len)) == TLSTuning.chacha {
        _ = SSL_set1_tls13_ciphers(hello.ssl, TLSTuning.chachaFirst, nil, TLSTuning.chachaFirst.count)
    }
    return ssl_select_cert_success
}
