extension IntakeScanner {
    /// A string's UTF-8 bytes (unescaped), valid until the next string is read.
    mutating func parseString() throws(ParseError) -> UnsafeBufferPointer<UInt8> {
        index += 1  // opening quote
        let start = index
        let base = bytes.baseAddress!
        var bits: UInt64 = 0  // any byte >= 0x80 sets a byte's high bit
        // Eight bytes at a time (SWAR) up to the first quote, backslash or
        // control byte: `Self.special` marks them; the rest byte by byte.
        while index + 8 <= bytes.count {
            let word = UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
            let marks = Self.special(word)
            if marks != 0 {
                let before = marks.trailingZeroBitCount / 8  // plain bytes before the first special one
                bits |= word & ((1 << UInt64(before * 8)) &- 1)
                index += before
                break
            }
            bits |= word
            index += 8
        }
        while index < bytes.count {
            let byte = base[index]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(start: base + start, count: index - start)
                guard bits & 0x8080_8080_8080_8080 == 0 || String(validating: slice, as: UTF8.self) != nil else {
                    throw ParseError(reason: "invalid UTF-8 in string", offset: start)
                }
                index += 1
                return slice
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw error("control character in string") }
            bits |= UInt64(byte)
            index += 1
        }
        // Escapes: unescape into `scratch` (never longer than the escaped text).
        if scratch == nil { scratch = .allocate(capacity: max(bytes.count, 4)) }
        let out = scratch!
        var count = index - start
        if count > 0 { out.update(from: bytes.baseAddress! + start, count: count) }
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                let result = UnsafeBufferPointer(start: out, count: count)
                guard Self.isValidUTF8(result) else { throw ParseError(reason: "invalid UTF-8 in string", offset: start) }
                index += 1
                return result
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw error("unexpected end of input") }
                let escaped = bytes[index]
                index += 1
                switch escaped {
                case UInt8(ascii: "\""): out[count] = 0x22; count += 1
                case UInt8(ascii: "\\"): out[count] = 0x5C; count += 1
                case UInt8(ascii: "/"): out[count] = 0x2F; count += 1
                case UInt8(ascii: "b"): out[count] = 0x08; count += 1
                case UInt8(ascii: "f"): out[count] = 0x0C; count += 1
                case UInt8(ascii: "n"): out[count] = 0x0A; count += 1
                case UInt8(ascii: "r"): out[count] = 0x0D; count += 1
                case UInt8(ascii: "t"): out[count] = 0x09; count += 1
                case UInt8(ascii: "u"):
                    var scalar = try parseHex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                              bytes[index + 1] == UInt8(ascii: "u") else {
                            throw error("unpaired surrogate in \\u escape")
                        }
                        index += 2
                        let low = try parseHex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw error("unpaired surrogate in \\u escape") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw error("unpaired surrogate in \\u escape")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid \\u escape") }
                    for unit in UTF8.encode(unicode)! {
                        out[count] = unit
                        count += 1
                    }
                default:
                    throw error("invalid escape sequence")
                }
            default:
                if byte < 0x20 { throw error("control character in string") }
                out[count] = byte
                count += 1
                index += 1
            }
        }
        throw error("unterminated string")
    }

    mutating func parseHex4() throws(ParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("invalid \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("invalid \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    /// The high bit of each byte of `word` that is a quote, a backslash or
    /// below 0x20. Exact up to the first such byte (the lowest set bit); a
    /// borrow may mark bytes above it, which are never looked at.
    @inline(__always)
    static func special(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        let quote = word ^ (ones &* 0x22), backslash = word ^ (ones &* 0x5C)
        let zeroQuote = (quote &- ones) & ~quote
        let zeroBackslash = (backslash &- ones) & ~backslash
        let control = (word &- ones &* 0x20) & ~word
        return (zeroQuote | zeroBackslash | control) & highs
    }

    /// What `String(validating:as: UTF8.self)` accepts (ASCII checked here, the rest by it).
    @inline(__always)
    static func isValidUTF8(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        for byte in text where byte >= 0x80 { return String(validating: text, as: UTF8.self) != nil }
        return true
    }
}

@inline(__always)
func memoryEqual(_ a: UnsafePointer<UInt8>?, _ b: UnsafePointer<UInt8>?, _ count: Int) -> Bool {
    guard count > 0 else { return true }
    guard let a, let b else { return false }
    @inline(__always) func word(_ p: UnsafePointer<UInt8>, _ i: Int) -> UInt64 { UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self) }
    @inline(__always) func half(_ p: UnsafePointer<UInt8>, _ i: Int) -> UInt32 { UnsafeRawPointer(p + i).loadUnaligned(as: UInt32.self) }
    if count < 4 {
        for i in 0..<count where a[i] != b[i] { return false }
        return true
    }
    if count <= 8 {  // two loads that overlap in the middle cover 4...8 bytes
        return half(a, 0) == half(b, 0) && half(a, count - 4) == half(b, count - 4)
    }
    var i = 0
    while i + 8 < count {  // eight bytes at a time, then the last eight (overlapping)
        guard word(a, i) == word(b, i) else { return false }
        i += 8
    }
    return word(a, count - 8) == word(b, count - 8)
}
