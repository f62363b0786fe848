import CLibdeflate

/// Inflates a body that is exactly one gzip member in one call with libdeflate,
/// into a buffer of the size the member's trailer declares (ISIZE): about a third
/// of zlib's instructions for kbtd's batches (BENCHMARKS.md, "Intake speed").
///
/// It answers only where libdeflate and zlib are known to agree, and returns
/// `nil` otherwise, so the caller runs zlib (`StreamingInflater`) from the start
/// and every refusal, cap and message stays zlib's:
///
///     if let json = WholeMemberInflater.inflate(body, maxOutput: cap) { ... }
///     else { /* StreamingInflater over the same bytes */ }
///
/// `nil` when: the header sets FHCRC (zlib checks it, libdeflate skips it) or a
/// reserved flag; ISIZE is 0, over `maxOutput`, or over 1032 times the body (more
/// than DEFLATE can expand); the first deflate block is not the only one or is
/// not a stored or dynamic block that `GzipMemberShape` admits; or libdeflate
/// fails, stops before the body's end (a second member, trailing bytes) or
/// produces a size other than ISIZE.
public enum WholeMemberInflater {
    /// DEFLATE's largest expansion: a 258-byte match in about two bits.
    static let maxRatio = 1032

    /// The inflated member, or `nil` when zlib must decide (see the type's comment).
    public static func inflate(_ member: [UInt8], maxOutput: Int) -> [UInt8]? {
        member.withUnsafeBufferPointer { inflate($0, maxOutput: maxOutput) }
    }

    /// The inflated member, or `nil` when zlib must decide (see the type's comment).
    public static func inflate(_ member: UnsafeBufferPointer<UInt8>, maxOutput: Int) -> [UInt8]? {
        guard let size = declaredSize(member), size <= maxOutput, size <= maxRatio * member.count,
              GzipMemberShape.admits(member),
              let decompressor = libdeflate_alloc_decompressor()
        else { return nil }
        defer { libdeflate_free_decompressor(decompressor) }
        var inflated = false
        let output = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            var consumed = 0
            // No actual_out pointer: libdeflate fails unless the output is exactly `size` bytes.
            let result = libdeflate_gzip_decompress_ex(
                decompressor, member.baseAddress, member.count, buffer.baseAddress, size, &consumed, nil)
            inflated = result == LIBDEFLATE_SUCCESS && consumed == member.count
            count = inflated ? size : 0
        }
        return inflated ? output : nil
    }

    /// ISIZE from the trailer (the last four bytes, little-endian), if the body can hold a member at all.
    static func declaredSize(_ member: UnsafeBufferPointer<UInt8>) -> Int? {
        guard member.count >= 18 else { return nil }
        let end = member.count
        let size = Int(member[end - 4]) | Int(member[end - 3]) << 8 | Int(member[end - 2]) << 16 | Int(member[end - 1]) << 24
        return size > 0 ? size : nil
    }
}
