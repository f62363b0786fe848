/// The shapes of gzip member `WholeMemberInflater` hands to libdeflate: those on
/// which libdeflate 1.14 and zlib 1.2.13 cannot disagree.
///
/// libdeflate is looser than zlib on a few malformed streams, and a gzip
/// trailer's CRC does not catch them when the looser reading produces the bytes
/// the CRC was computed over. It accepts a precode with a single length-1
/// symbol, code-length repeats running past the end of the lengths, 287-288
/// literal/length and 31-32 distance codes (decoding symbols 286-287 and 30-31,
/// which zlib refuses), codes without an end-of-block symbol, and it decodes
/// the unused codeword of an incomplete single-symbol code where zlib refuses it.
/// All of these live in a block's header or follow from it, so a member is
/// admitted only when its deflate stream is one final block, stored or dynamic,
/// whose header zlib would accept with complete codes (no fixed block: its
/// code includes symbols 286-287 and 30-31). The check reads the header alone,
/// a few hundred bits.
enum GzipMemberShape {
    /// Whether `member` is a gzip member libdeflate may inflate for zlib.
    static func admits(_ member: UnsafeBufferPointer<UInt8>) -> Bool {
        guard member.count >= 18, admitsStart(member[0], member[1], member[2], member[3]) else { return false }
        let flags = member[3]
        var offset = 10
        if flags & 0x04 != 0 {  // FEXTRA: a 16-bit length, then that many bytes.
            guard offset + 2 <= member.count else { return false }
            offset += 2 + (Int(member[offset]) | Int(member[offset + 1]) << 8)
        }
        for flag: UInt8 in [0x08, 0x10] where flags & flag != 0 {  // FNAME, FCOMMENT: zero-terminated.
            while offset < member.count && member[offset] != 0 { offset += 1 }
            offset += 1
        }
        // The deflate stream lies between the header and the 8-byte trailer.
        guard offset < member.count - 8 else { return false }
        var bits = BitReader(member, from: offset, to: member.count - 8)
        return admitsOnlyBlock(&bits)
    }

    /// Whether a member's first four bytes (ID1, ID2, CM, FLG) leave it to this check: gzip, deflate,
    /// and neither FHCRC (0x02: zlib checks the header CRC, libdeflate skips it) nor a reserved bit
    /// (0xE0: zlib's message). `BodyInflater` asks it as soon as a body's first four bytes are in.
    static func admitsStart(_ id1: UInt8, _ id2: UInt8, _ method: UInt8, _ flags: UInt8) -> Bool {
        id1 == 0x1F && id2 == 0x8B && method == 8 && flags & 0xE2 == 0
    }

    /// Reads the first block's header; true if it is final and zlib and libdeflate read it alike.
    static func admitsOnlyBlock(_ bits: inout BitReader) -> Bool {
        guard let final = bits.take(1), final == 1, let type = bits.take(2) else { return false }
        switch type {
        case 0: return true  // stored: both check LEN against NLEN and the input's end.
        case 2: return admitsDynamicHeader(&bits)
        default: return false  // fixed (symbols 286-287, 30-31 decodable) or the invalid type 3.
        }
    }

    /// The order code-length code lengths are sent in (RFC 1951, 3.2.7).
    static let precodeOrder = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]

    static func admitsDynamicHeader(_ bits: inout BitReader) -> Bool {
        guard let hlit = bits.take(5), let hdist = bits.take(5), let hclen = bits.take(4) else { return false }
        let literals = hlit + 257, distances = hdist + 1
        guard literals <= 286, distances <= 30 else { return false }
        var precodeLengths = [Int](repeating: 0, count: 19)
        for index in 0..<(hclen + 4) {
            guard let length = bits.take(3) else { return false }
            precodeLengths[precodeOrder[index]] = length
        }
        guard let precode = PrecodeTable(lengths: precodeLengths) else { return false }
        var lengths = [Int](repeating: 0, count: literals + distances)
        var index = 0
        while index < lengths.count {
            guard let symbol = precode.decode(&bits) else { return false }
            if symbol < 16 {
                lengths[index] = symbol
                index += 1
                continue
            }
            let repeated: Int, value: Int
            switch symbol {
            case 16:
                guard index > 0, let extra = bits.take(2) else { return false }
                (repeated, value) = (3 + extra, lengths[index - 1])
            case 17:
                guard let extra = bits.take(3) else { return false }
                (repeated, value) = (3 + extra, 0)
            default:
                guard let extra = bits.take(7) else { return false }
                (repeated, value) = (11 + extra, 0)
            }
            // zlib: "invalid bit length repeat"; libdeflate lets a repeat run past the end.
            guard index + repeated <= lengths.count else { return false }
            for slot in index..<(index + repeated) { lengths[slot] = value }
            index += repeated
        }
        // zlib: "invalid code -- missing end-of-block"; and both codes complete (see the type's comment).
        return lengths[256] != 0
            && isComplete(lengths[0..<literals], maxLength: 15)
            && isComplete(lengths[literals...], maxLength: 15)
    }

    /// Whether the lengths fill the code space exactly (Kraft's sum is 1).
    static func isComplete(_ lengths: ArraySlice<Int>, maxLength: Int) -> Bool {
        var used = 0
        for length in lengths where length > 0 { used += 1 << (maxLength - length) }
        return used == 1 << maxLength
    }
}

/// The code-length code as a 128-entry table indexed by the next 7 bits of the
/// stream (codes are at most 7 bits), built only when the code is complete.
struct PrecodeTable {
    /// symbol | length << 8, for every 7-bit prefix.
    private var entries = [Int](repeating: 0, count: 128)

    init?(lengths: [Int]) {
        guard GzipMemberShape.isComplete(lengths[...], maxLength: 7) else { return nil }
        var nextCode = [Int](repeating: 0, count: 9)
        var code = 0
        var counts = [Int](repeating: 0, count: 8)
        for length in lengths where length > 0 { counts[length] += 1 }
        for length in 1...7 {
            code = (code + counts[length - 1]) << 1
            nextCode[length] = code
        }
        for (symbol, length) in lengths.enumerated() where length > 0 {
            let canonical = nextCode[length]
            nextCode[length] += 1
            // Huffman codes are sent most significant bit first: reverse to index by stream order.
            var reversed = 0
            for bit in 0..<length where canonical >> (length - 1 - bit) & 1 == 1 { reversed |= 1 << bit }
            var slot = reversed
            while slot < 128 {
                entries[slot] = symbol | length << 8
                slot += 1 << length
            }
        }
    }

    func decode(_ bits: inout BitReader) -> Int? {
        let entry = entries[bits.peek(7)]
        guard bits.skip(entry >> 8) else { return nil }
        return entry & 0xFF
    }
}

/// Least-significant-bit-first reading of a byte range, as DEFLATE packs it.
struct BitReader {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var position: Int
    private let end: Int

    init(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) {
        self.bytes = bytes
        position = start * 8
        self.end = end * 8
    }

    /// The next `count` bits (up to 16) without consuming them; zeros past the end.
    func peek(_ count: Int) -> Int {
        var value = 0
        var taken = 0
        var at = position
        while taken < count && at < end {
            let available = min(8 - at & 7, count - taken)
            let byte = Int(bytes[at >> 3]) >> (at & 7)
            value |= (byte & (1 << available - 1)) << taken
            taken += available
            at += available
        }
        return value
    }

    /// Consumes `count` bits; false if fewer remain.
    mutating func skip(_ count: Int) -> Bool {
        guard position + count <= end else { return false }
        position += count
        return true
    }

    /// The next `count` bits, or `nil` if fewer remain.
    mutating func take(_ count: Int) -> Int? {
        let value = peek(count)
        return skip(count) ? value : nil
    }
}
