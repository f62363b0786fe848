extension IntakeScanner {
    /// A number literal (as `JSONParser.parseNumber`: same syntax checks,
    /// same value). The significant digits (up to 19) make a 64-bit integer w
    /// and the literal is w × 10^q; `DecimalConversion` rounds that correctly
    /// for q within ±64 (Clinger's exact fast path, else Eisel-Lemire). With
    /// more than 19 significant digits the value lies between w × 10^q and
    /// (w + 1) × 10^q: when both round to the same Double, that is the answer.
    /// Anything undecided goes through `Double(String)` itself.
    mutating func parseNumber() throws(ParseError) -> Double {
        let start = index
        let base = bytes.baseAddress!
        let end = bytes.count
        @inline(__always) func digit(_ i: Int) -> UInt64? {
            let d = base[i] &- UInt8(ascii: "0")
            return d < 10 ? UInt64(d) : nil
        }
        var negative = false
        if base[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        guard index < end, digit(index) != nil else { throw error("invalid number") }
        var mantissa: UInt64 = 0
        var significant = 0  // digits from the first non-zero one
        var scale = 0  // the power of ten the digits in `mantissa` are short of
        if base[index] == UInt8(ascii: "0") {
            index += 1
            if index < end, digit(index) != nil { throw error("invalid number: leading zero") }
        } else {
            while index < end, let d = digit(index) {
                if significant < 19 { mantissa = mantissa &* 10 &+ d } else { scale += 1 }
                significant += 1
                index += 1
            }
        }
        if index < end, base[index] == UInt8(ascii: ".") {
            index += 1
            guard index < end, digit(index) != nil else { throw error("invalid number") }
            while index < end, let d = digit(index) {
                if significant < 19 {
                    mantissa = mantissa &* 10 &+ d
                    scale -= 1
                    if mantissa != 0 { significant += 1 }
                } else {
                    significant += 1
                }
                index += 1
            }
        }
        var exponent = 0
        var exponentDigits = 0
        if index < end, base[index] == UInt8(ascii: "e") || base[index] == UInt8(ascii: "E") {
            index += 1
            var exponentNegative = false
            if index < end, base[index] == UInt8(ascii: "+") || base[index] == UInt8(ascii: "-") {
                exponentNegative = base[index] == UInt8(ascii: "-")
                index += 1
            }
            guard index < end, digit(index) != nil else { throw error("invalid number") }
            while index < end, let d = digit(index) {
                if exponentDigits < 6 { exponent = exponent * 10 + Int(d) }
                exponentDigits += 1
                index += 1
            }
            if exponentNegative { exponent = -exponent }
        }
        guard index - start <= 64 else { throw ParseError(reason: "number literal too long", offset: start) }
        if exponentDigits <= 6 || mantissa == 0 {
            let q = exponent + scale
            if significant <= 19 {
                if let value = DecimalConversion.double(mantissa: mantissa, exponent: q, negative: negative) { return value }
            } else if let low = DecimalConversion.eiselLemire(mantissa, q, negative: negative),
                      let high = DecimalConversion.eiselLemire(mantissa + 1, q, negative: negative),
                      low.bitPattern == high.bitPattern {
                return low
            }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            throw ParseError(reason: "number out of range", offset: start)
        }
        return value
    }

    /// One number literal, read as the scanner reads one in a document
    /// (`DecimalConversionTests` compares it with `Double(String)`).
    static func number(literal: [UInt8]) throws(ParseError) -> Double {
        let result = literal.withUnsafeBufferPointer { buffer -> Result<Double, ParseError> in
            var scanner = IntakeScanner(bytes: buffer, rules: FieldRules(maxSamples: 1), now: 0)
            do throws(ParseError) {
                guard !buffer.isEmpty else { throw scanner.error("unexpected end of input") }
                let value = try scanner.parseNumber()
                guard scanner.index == buffer.count else { throw scanner.error("unexpected data after the JSON document") }
                return .success(value)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}

/// The common number literal read eight bytes at a time (SWAR): `[-]digits[.digits]`
/// with at most 19 digits in all, no exponent, whole words readable. Anything
/// else (an exponent, more digits, a syntax error, a value the fast conversion
/// cannot decide, the end of the buffer near) is `parseNumber`'s from the start
/// of the literal, so the value, the error and its offset are always its.
extension IntakeScanner {
    @inline(__always)
    mutating func parseNumberFast() throws(ParseError) -> Double {
        let base = bytes.baseAddress!
        let end = bytes.count
        var i = index
        let negative = base[i] == UInt8(ascii: "-")
        if negative { i += 1 }
        guard i + 16 <= end else { return try parseNumber() }
        var x = Self.digitWord(base, i)
        var run = Self.digitRun(x)
        // No digit, or a leading zero followed by digits: parseNumber's errors.
        guard run > 0, run == 1 || base[i] != UInt8(ascii: "0") else { return try parseNumber() }
        var mantissa: UInt64
        var digits: Int
        if run < 8 {
            mantissa = Self.digitValue(x, run)
            digits = run
            i += run
        } else {
            mantissa = Self.digitValue(x, 8)
            i += 8
            x = Self.digitWord(base, i)
            run = Self.digitRun(x)
            guard run < 8 else { return try parseNumber() }
            mantissa = mantissa &* Self.powerOfTen(run) &+ Self.digitValue(x, run)
            digits = 8 + run
            i += run
        }
        var scale = 0
        if base[i] == UInt8(ascii: "."), i + 2 < end, base[i + 1] == UInt8(ascii: "0"), base[i + 2] &- UInt8(ascii: "0") >= 10 {
            // `x.0` (how most encoders write a whole Double): the value of x, without a word of fraction digits.
            i += 2
        } else if base[i] == UInt8(ascii: ".") {
            i += 1
            guard i + 8 <= end else { return try parseNumber() }
            x = Self.digitWord(base, i)
            run = Self.digitRun(x)
            guard run > 0, run < 8, digits + run <= 19 else { return try parseNumber() }
            mantissa = mantissa &* Self.powerOfTen(run) &+ Self.digitValue(x, run)
            scale = -run
            i += run
        }
        // An exponent, or the end too near to tell: the general reader.
        guard i < end, base[i] | 0x20 != UInt8(ascii: "e"),
              let value = DecimalConversion.double(mantissa: mantissa, exponent: scale, negative: negative) else {
            return try parseNumber()
        }
        index = i
        return value
    }

    /// The eight bytes at `i`, each digit turned into its value 0-9 (other bytes into 10 or more).
    @inline(__always)
    static func digitWord(_ base: UnsafePointer<UInt8>, _ i: Int) -> UInt64 {
        UInt64(littleEndian: UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)) ^ 0x3030_3030_3030_3030
    }

    /// How many of `word`'s bytes (from the first in memory) are digits before the first that is not (0-8).
    @inline(__always)
    static func digitRun(_ word: UInt64) -> Int {
        // A byte of 10 or more gets its high bit set; a carry out of it only
        // marks bytes after it, and only the first mark counts.
        let marks = ((word &+ 0x7676_7676_7676_7676) | word) & 0x8080_8080_8080_8080
        return marks.trailingZeroBitCount >> 3
    }

    /// The value of the first `count` (1-8) digits of `word` (as `digitWord` gives them).
    @inline(__always)
    static func digitValue(_ word: UInt64, _ count: Int) -> UInt64 {
        // The digits moved to the high bytes (the low ones zero: leading zeros), then
        // combined pairwise: 8 digits in three multiplications.
        let mask: UInt64 = 0x0000_00FF_0000_00FF
        let hundreds: UInt64 = 100 + (1_000_000 << 32), units: UInt64 = 1 + (10_000 << 32)
        var value = word << UInt64((8 - count) * 8)
        value = (value &* 10) &+ (value >> 8)
        let high = (value & mask) &* hundreds
        let low = ((value >> 16) & mask) &* units
        return ((high &+ low) >> 32) & 0xFFFF_FFFF
    }

    /// 10^0 ... 10^7 (a constant array the compiler lays out statically: no
    /// table built on the stack each call, which also cost the caller a stack-protector check).
    static let integerPowersOfTen: [UInt64] = [1, 10, 100, 1_000, 10_000, 100_000, 1_000_000, 10_000_000]

    @inline(__always)
    static func powerOfTen(_ count: Int) -> UInt64 {
        integerPowersOfTen[count]
    }
}
