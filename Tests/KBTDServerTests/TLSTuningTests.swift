import Foundation
import KBTDTestSupport
import Testing
@testable import KBTDServer

/// kbtd reaches swift-nio-ssl's private `SSL_CTX` by reflection (TLSTuning): this suite is the
/// check that fails when a swift-nio-ssl version changes that layout.
@Suite("TLS context tuning: swift-nio-ssl's SSL_CTX reached and set")
struct TLSTuningTests {
    static func box() throws -> (TLSContextBox, TestCertificates, URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kbtd-tuning-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let pair = try TestCertificates.make(in: directory, name: "a")
        return (try TLSContextBox(certificate: pair.chain, key: pair.key), pair, directory)
    }

    @Test func theSSLContextIsReachedAndSendsOneTicket() throws {
        let (box, _, directory) = try Self.box()
        defer { try? FileManager.default.removeItem(at: directory) }
        #expect(box.tuningFailure == nil, "\(box.tuningFailure.map(String.init(describing:)) ?? "")")
        #expect(try TLSTuning.ticketsPerHandshake(of: box.current) == 1)
    }

    @Test func aReloadedPairIsTunedToo() throws {
        let (box, _, directory) = try Self.box()
        defer { try? FileManager.default.removeItem(at: directory) }
        let renewed = try TestCertificates.make(in: directory, name: "b")
        let before = box.current
        #expect(try box.reload(certificate: renewed.chain, key: renewed.key))
        #expect(box.current !== before)
        #expect(box.tuningFailure == nil)
        #expect(try TLSTuning.ticketsPerHandshake(of: box.current) == 1)
    }

    /// An untuned context made outside TLSCredentials has BoringSSL's default of two tickets: the
    /// pointer read is a live SSL_CTX, not a stale or foreign one.
    @Test func anotherContextsSSLContextIsItsOwn() throws {
        let (box, pair, directory) = try Self.box()
        defer { try? FileManager.default.removeItem(at: directory) }
        let plain = try TLSCredentials.context(certificate: pair.chain, key: pair.key)
        #expect(try TLSTuning.ticketsPerHandshake(of: plain) == 2)
        #expect(try TLSTuning.sslContext(of: plain) != (try TLSTuning.sslContext(of: box.current)))
    }

    @Test func theClientsFirstTLS13SuiteSkipsGREASEAndTLS12Suites() {
        // GREASE 0x0a0a, ECDHE-RSA-AES128-GCM-SHA256 0xc02f, then ChaCha20 and AES-128.
        let hello: [UInt8] = [0x0a, 0x0a, 0xc0, 0x2f, 0x13, 0x03, 0x13, 0x01]
        #expect(hello.withUnsafeBufferPointer(TLSTuning.firstTLS13Suite) == TLSTuning.chacha)
        let aes: [UInt8] = [0x13, 0x02, 0x13, 0x03]
        #expect(aes.withUnsafeBufferPointer(TLSTuning.firstTLS13Suite) == TLSTuning.aes256)
        let tls12: [UInt8] = [0xc0, 0x2f, 0x13]
        #expect(tls12.withUnsafeBufferPointer(TLSTuning.firstTLS13Suite) == nil)
    }
}
