import Foundation

extension UUID {
    /// A batch id: a version 7 UUID (RFC 9562) whose 48-bit time field is `date` in whole seconds
    /// (counted in milliseconds, the last three digits zero: no finer than the samples' own `t`),
    /// and 74 random bits.
    ///
    /// kbtd stores every batch id it has counted in an index (exactly-once retries). A random (v4)
    /// id lands on a random page of that index, so a group commit of N batches rewrites about N
    /// pages of it; ids that grow with time land beside each other on the last pages, which
    /// one commit after another shares. Two batches of one
    /// phone still share nothing but the order of the seconds they were sealed in.
    static func batchID(sealedAt date: Date, using generator: inout some RandomNumberGenerator) -> UUID {
        let milliseconds = UInt64(max(0, date.timeIntervalSince1970.rounded(.down))) * 1000
        let high = generator.next() as UInt64, low = generator.next() as UInt64
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<6 { bytes[index] = UInt8(truncatingIfNeeded: milliseconds >> (8 * (5 - index))) }
        for index in 6..<8 { bytes[index] = UInt8(truncatingIfNeeded: high >> (8 * index)) }
        for index in 8..<16 { bytes[index] = UInt8(truncatingIfNeeded: low >> (8 * (index - 8))) }
        bytes[6] = 0x70 | (bytes[6] & 0x0F)  // version 7
        bytes[8] = 0x80 | (bytes[8] & 0x3F)  // variant 10 (RFC 9562)
        return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                           bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
    }

    /// `batchID(sealedAt:using:)` with the system's cryptographic random source.
    static func batchID(sealedAt date: Date) -> UUID {
        var generator = SystemRandomNumberGenerator()
        return batchID(sealedAt: date, using: &generator)
    }
}
