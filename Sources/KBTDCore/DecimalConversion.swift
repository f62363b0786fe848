/// Correctly rounded decimal-to-`Double` conversion for the common case,
/// without `strtod`: w × 10^q with a 64-bit w and q within the table of
/// `PowersOfFive` (-64...64).
///
/// Two steps, the cheap one first:
/// - Clinger's fast path: w ≤ 2^53 and |q| ≤ 22, so w and 10^|q| are both
///   exact Doubles and one IEEE multiplication or division rounds correctly.
/// - Eisel-Lemire (the algorithm of fast_float, Go's strconv and Rust's
///   core): w times a 128-bit approximation of 5^q, with the binary
///   exponent from q·log2(10); it returns nil when the truncated product
///   cannot decide the rounding (rare), and the caller falls back to `Double(String)`.
///
/// `DecimalConversionTests` compares the results bit for bit with `Double(String)`.
enum DecimalConversion {
    /// 1e0 ... 1e22: every one exact in a Double.
    static let powersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    /// ±w × 10^q correctly rounded (round half to even), or nil: q outside
    /// -64...64, a product too close to a halfway point to decide, or a
    /// result outside the normal range.
    @inline(__always)
    static func double(mantissa w: UInt64, exponent q: Int, negative: Bool) -> Double? {
        if w == 0 { return negative ? -0.0 : 0.0 }
        if w <= 1 << 53, q >= -22, q <= 22 {
            let value = q >= 0 ? Double(w) * powersOfTen[q] : Double(w) / powersOfTen[-q]
            return negative ? -value : value
        }
        return eiselLemire(w, q, negative: negative)
    }

    /// The Eisel-Lemire step alone (w > 0), as fast_float's `compute_float<binary64>`.
    static func eiselLemire(_ w: UInt64, _ q: Int, negative: Bool) -> Double? {
        guard w != 0, q >= PowersOfFive.smallest, q <= PowersOfFive.largest else { return nil }
        let leadingZeros = w.leadingZeroBitCount
        let normalized = w << UInt64(leadingZeros)
        let index = 2 * (q - PowersOfFive.smallest)
        // The high 128 bits of normalized × 5^q: one 64×64 product, and a
        // second one only when the bits below the 55 we keep are all ones.
        var (high, low) = normalized.multipliedFullWidth(by: PowersOfFive.table[index])
        if high & 0x1FF == 0x1FF {
            let second = normalized.multipliedFullWidth(by: PowersOfFive.table[index + 1]).high
            let (sum, overflow) = low.addingReportingOverflow(second)
            low = sum
            if overflow { high &+= 1 }
        }
        // Beyond the exact range (5^q fits 128 bits for 0 ≤ q ≤ 55, 5^-q fits
        // 64 bits for q ≥ -27), all-ones low bits may hide a carry: undecided.
        if low == UInt64.max, q < -27 || q > 55 { return nil }
        let upperBit = Int(high >> 63)
        var mantissa = high >> UInt64(upperBit + 64 - 52 - 3)
        // floor(q·log2(10)) + 63, as fast_float's `power(q)`; 1023 is the exponent bias.
        var power2 = (((152_170 + 65_536) * q) >> 16) + 63 + upperBit - leadingZeros + 1023
        guard power2 > 0 else { return nil }  // subnormal: not in this table's range anyway
        // Exactly halfway between two Doubles (only possible when 5^q is
        // exact in 64 bits): round to even instead of up.
        if low <= 1, q >= -4, q <= 23, mantissa & 3 == 1,
           mantissa << UInt64(upperBit + 64 - 52 - 3) == high {
            mantissa &= ~1
        }
        mantissa += mantissa & 1
        mantissa >>= 1
        if mantissa >= 2 << 52 {
            mantissa = 1 << 52
            power2 += 1
        }
        mantissa &= ~(1 << 52)
        guard power2 < 0x7FF else { return nil }
        let sign: UInt64 = negative ? 1 << 63 : 0
        return Double(bitPattern: sign | UInt64(power2) << 52 | mantissa)
    }
}
