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
