import Foundation

/// SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast short-input PRF",
/// 2012): a keyed 64-bit hash. kbtd hashes client networks with it under a
/// secret 128-bit key (`SourceKey`), so a stored source identifier cannot be
/// turned back into an address by hashing every address without the key.
public enum SipHash {
    /// SipHash-2-4 of `bytes` under the key (`k0`, `k1`): the key's bytes 0...7
    /// and 8...15 read little-endian, as in the reference implementation.
    public static func hash(_ bytes: some Collection<UInt8>, k0: UInt64, k1: UInt64) -> UInt64 {
        var v0: UInt64 = 0x736f_6d65_7073_6575 ^ k0
        var v1: UInt64 = 0x646f_7261_6e64_6f6d ^ k1
        var v2: UInt64 = 0x6c79_6765_6e65_7261 ^ k0
        var v3: UInt64 = 0x7465_6462_7974_6573 ^ k1

        @inline(__always) func round() {
            v0 = v0 &+ v1; v1 = rotate(v1, 13); v1 ^= v0; v0 = rotate(v0, 32)
            v2 = v2 &+ v3; v3 = rotate(v3, 16); v3 ^= v2
            v0 = v0 &+ v3; v3 = rotate(v3, 21); v3 ^= v0
            v2 = v2 &+ v1; v1 = rotate(v1, 17); v1 ^= v2; v2 = rotate(v2, 32)
        }

        var word: UInt64 = 0
        var filled = 0
        for byte in bytes {
            word |= UInt64(byte) << UInt64(8 * filled)
            filled += 1
            if filled == 8 {
                v3 ^= word
                round(); round()
                v0 ^= word
                word = 0
                filled = 0
            }
        }
        // The last block: the remaining bytes and the length's low byte on top.
        word |= UInt64(truncatingIfNeeded: bytes.count) << 56
        v3 ^= word
        round(); round()
        v0 ^= word
        v2 ^= 0xff
        round(); round(); round(); round()
        return v0 ^ v1 ^ v2 ^ v3
    }

    @inline(__always) private static func rotate(_ x: UInt64, _ bits: UInt64) -> UInt64 {
        (x << bits) | (x >> (64 - bits))
    }
}

/// The secret 128-bit key client networks are hashed under (`SourceID(network:key:)`).
/// The daemon generates it once and keeps it beside the database (docs/privacy.md);
/// it is never logged and never stored in the database.
public struct SourceKey: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    public var k0: UInt64
    public var k1: UInt64

    public init(k0: UInt64, k1: UInt64) {
        self.k0 = k0
        self.k1 = k1
    }

    /// Never the key itself: a key interpolated into a log line by mistake stays secret.
    public var description: String { "SourceKey(redacted)" }
    public var debugDescription: String { description }

    /// A fresh key from the system's cryptographic random source.
    public static func random() -> SourceKey {
        var generator = SystemRandomNumberGenerator()
        return SourceKey(k0: generator.next(), k1: generator.next())
    }

    /// Parses the file form: 32 hexadecimal digits (the key's 16 bytes in
    /// order), surrounding white space ignored; nil for anything else.
    public init?(hex text: some StringProtocol) {
        let digits = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard digits.utf8.count == 32 else { return nil }
        var bytes: [UInt8] = []
        var index = digits.startIndex
        while index < digits.endIndex {
            let next = digits.index(index, offsetBy: 2)
            guard let byte = UInt8(digits[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        var k0: UInt64 = 0, k1: UInt64 = 0
        for i in 0..<8 {
            k0 |= UInt64(bytes[i]) << UInt64(8 * i)
            k1 |= UInt64(bytes[8 + i]) << UInt64(8 * i)
        }
        self.init(k0: k0, k1: k1)
    }

    /// The file form: 32 lowercase hexadecimal digits.
    public var hex: String {
        var text = ""
        for word in [k0, k1] {
            for i in 0..<8 {
                let byte = UInt8(truncatingIfNeeded: word >> UInt64(8 * i))
                text += (byte < 16 ? "0" : "") + String(byte, radix: 16)
            }
        }
        return text
    }
}
