@testable import KBTDCore
import Testing

/// `BatchIntake`'s number literals (Clinger's fast path, Eisel-Lemire with
/// the generated `PowersOfFive` table, the >19-digit w / w+1 check, and the
/// `Double(String)` fallback) against `Double(String)`, bit for bit.
@Suite("Decimal conversion")
struct DecimalConversionTests {
    /// Each literal's reading by the scanner; the literals that differ from
    /// `Double(String)` (a non-finite `Double(String)` must be the scanner's "number out of range").
    static func mismatches(_ literals: [String]) -> [String] {
        var wrong: [String] = []
        for literal in literals {
            guard let expected = Double(literal) else {
                wrong.append("\(literal): not a Double literal (test bug)")
                continue
            }
            do {
                let got = try IntakeScanner.number(literal: Array(literal.utf8))
                if !expected.isFinite || got.bitPattern != expected.bitPattern {
                    wrong.append("\(literal): got \(got) (\(String(got.bitPattern, radix: 16))), expected \(expected) (\(String(expected.bitPattern, radix: 16)))")
                }
            } catch {
                if expected.isFinite || error.reason != "number out of range" {
                    wrong.append("\(literal): threw \(error), expected \(expected)")
                }
            }
        }
        return wrong
    }

    /// Random digit strings: 1 to 30 digits, a decimal point anywhere, exponents
    /// -90...90 (beyond the table's ±64 too), signs, leading zeros after "0.".
    @Test func randomLiterals() {
        var random = SplitMix64(seed: 0x5EED_0011)
        var literals: [String] = []
        for _ in 0..<200_000 {
            var digits = ""
            let count = random.integer(1...30)
            for i in 0..<count {
                let low = i == 0 ? 1 : 0
                digits.append(Character(Unicode.Scalar(UInt8(ascii: "0") + UInt8(random.integer(low...9)))))
            }
            var literal = random.chance(0.3) ? "-" : ""
            let point = random.integer(0...count)
            if point == 0 {
                literal += "0." + String(repeating: "0", count: random.integer(0...12)) + digits
            } else if point == count {
                literal += digits
            } else {
                literal += digits.prefix(point) + "." + digits.dropFirst(point)
            }
            if random.chance(0.6) {
                literal += ["e", "E", "e+", "e-", "E-"][random.integer(0...4)] + String(random.integer(0...90))
            }
            if literal.utf8.count <= 64 { literals.append(literal) }
        }
        #expect(literals.count > 190_000)
        let wrong = Self.mismatches(literals)
        #expect(wrong.isEmpty, "\(wrong.count) differ, e.g. \(wrong.prefix(5))")
    }

    /// Doubles printed shortest (up to 17 digits, Swift's `description`):
    /// random bit patterns over the whole range, and timestamps like the
    /// clients' `t` (17 significant digits, the daemon's commonest literal).
    @Test func shortestRepresentations() {
        var random = SplitMix64(seed: 0x5EED_0012)
        var literals: [String] = []
        for _ in 0..<100_000 {
            let value = Double(bitPattern: random.next())
            if value.isFinite { literals.append("\(value)") }
        }
        for _ in 0..<100_000 {
            literals.append("\(random.uniform(1_700_000_000...1_800_000_000))")
            literals.append("\(random.uniform(0...2000))")
        }
        let wrong = Self.mismatches(literals)
        #expect(wrong.isEmpty, "\(wrong.count) differ, e.g. \(wrong.prefix(5))")
    }

    /// Exactly halfway between two neighbouring Doubles (ties go to even), and
    /// a hair above and below: integers past 2^53, and values with a few
    /// fractional bits written out exactly in decimal.
    @Test func halfwayCases() {
        var random = SplitMix64(seed: 0x5EED_0013)
        var literals: [String] = []
        for _ in 0..<20_000 {
            // m × 2^k for k in 1...60: the midpoint above it is an integer, (2m+1) × 2^(k-1).
            let m = UInt128((random.next() >> 11) | 1 << 52)
            let k = random.integer(1...60)
            let midpoint = (2 * m + 1) << (k - 1)
            literals += ["\(midpoint)", "\(midpoint).000001", "\(midpoint - 1).99999", "\(midpoint)e0",
                         "\(midpoint / 10).\(midpoint % 10)e1"]
            // m × 2^-k for k in 0...10: the midpoint is (2m+1) × 5^(k+1) × 10^-(k+1).
            let f = random.integer(0...10)
            var scaled = 2 * m + 1
            for _ in 0...f { scaled *= 5 }
            let text = "\(scaled)"
            let whole = String(text.dropLast(f + 1)), fraction = String(text.suffix(f + 1))
            literals += ["\(whole).\(fraction)", "\(whole).\(fraction)0001", "\(scaled)e-\(f + 1)",
                         "\(whole).\(String("\(scaled - 1)".suffix(f + 1)))999"]
        }
        let wrong = Self.mismatches(literals.filter { $0.utf8.count <= 64 })
        #expect(wrong.isEmpty, "\(wrong.count) differ, e.g. \(wrong.prefix(5))")
    }

    /// Hand-picked edges: 2^53, 17-19-20 digits, the table's ends, subnormals,
    /// negative zero, leading zeros, digits beyond 19, overflow.
    @Test func edgeCases() {
        var literals = [
            "0", "-0", "0.0", "-0.0", "-0e10", "-0.000e-5", "0e999999999", "-0.0000000000000000000000000",
            "9007199254740991", "9007199254740992", "9007199254740993", "9007199254740994", "9007199254740995",
            "-9007199254740993", "9007199254740993.0", "900719925474099.3e1", "9007199254740993e-22", "9007199254740993e22",
            "18446744073709551615", "18446744073709551616", "9999999999999999999", "10000000000000000000",
            "1e22", "1e23", "1e-22", "1e-23", "8.98846567431158e307", "1.7976931348623157e308", "1.7976931348623158e308",
            "1.7976931348623159e308", "1e308", "1e309", "-1e309", "2e308",
            "1e64", "1e65", "1e63", "1e-64", "1e-65", "1e-63", "9999999999999999999e64", "9999999999999999999e-64",
            "1234567890123456789e45", "1234567890123456789e-83", "1234567890123456789e-84",
            "2.2250738585072011e-308", "2.2250738585072014e-308", "2.225073858507201136057409796709131975934819546351645e-308",
            "4.9406564584124654e-324", "2.4703282292062327e-324", "2.4703282292062328e-324", "1e-320", "1e-400",
            "0.000000000000000000000000000000000000000000000012345", "0.1", "0.2", "0.3", "0.30000000000000004",
            "1763719198.1234567", "1763719198.12345678", "1763719198.123456789", "1763719198.1234567890123",
            "1.00000000000000000000000000000000000000001", "0.99999999999999999999999999999999999",
            "1.0000000000000001110223024625156540423631668090820312500001", "1.00000000000000011102230246251565404236316680908203125",
            "1.00000000000000011102230246251565404236316680908203124999", "123456789012345678901234567890",
            "7.0e-10", "3.4028234663852886e38", "5e-1", "5E+1", "12.5e-0001",
        ]
        for e in [-66, -65, -64, -63, -28, -27, -26, -23, -22, -5, -4, 22, 23, 24, 55, 56, 63, 64, 65, 66] {
            for mantissa in ["1", "9007199254740993", "17976931348623157", "4611686018427387904", "9999999999999999999", "1844674407370955161"] {
                literals.append("\(mantissa)e\(e)")
            }
        }
        let wrong = Self.mismatches(literals)
        #expect(wrong.isEmpty, "\(wrong)")
    }

    /// The fast paths decide (rather than falling back) for nearly every
    /// w × 10^q with q inside the table, and agree with `Double(String)` when they do.
    @Test func fastPathDecides() {
        var random = SplitMix64(seed: 0x5EED_0014)
        var decided = 0, total = 0
        var wrong: [String] = []
        for _ in 0..<100_000 {
            let w = random.next() % 10_000_000_000_000_000_000
            let q = random.integer(-64...64)
            total += 1
            guard let value = DecimalConversion.double(mantissa: w, exponent: q, negative: false) else { continue }
            decided += 1
            let expected = Double("\(w)e\(q)")!
            if value.bitPattern != expected.bitPattern { wrong.append("\(w)e\(q): \(value) vs \(expected)") }
        }
        #expect(wrong.isEmpty, "\(wrong.prefix(5))")
        #expect(decided * 1000 >= total * 999, "decided \(decided) of \(total)")
        // Out of the table, it declines.
        #expect(DecimalConversion.double(mantissa: 12_345_678_901_234_567, exponent: 65, negative: false) == nil)
        #expect(DecimalConversion.double(mantissa: 12_345_678_901_234_567, exponent: -65, negative: false) == nil)
    }
}

/// `SeriesCounts.rounded` (the counting intake's bins without libm's `round`)
/// against `Int(value.rounded())`, which `HeightBin` and `AnimationBin` use.
@Suite("Bin rounding")
struct BinRoundingTests {
    @Test func halfwayAndNeighbours() {
        var values: [Double] = [0, -0.0, 0.5, 1.5, 2.5, 0.49999999999999994, 0.5000000000000001, 4000, 3999.5,
                                0x1p52 - 0.5, 0x1p52, 0x1p53, -0.5, -1.5, -2.4999999, 0x1p62]
        for half in 0...8_000 {
            let value = Double(half) / 2
            values += [value, value.nextUp, value.nextDown, value + 0.25]
        }
        let wrong = values.filter { SeriesCounts.rounded($0) != Int($0.rounded()) }
        #expect(wrong.isEmpty, "rounded differs from Int(rounded()) at \(wrong.prefix(5))")
    }

    /// Heights, parts and durations as the scanner reads them from decimal literals.
    @Test func randomLiterals() {
        var random = SplitMix64(seed: 0xB175_0001)
        var wrong: [Double] = []
        for _ in 0..<200_000 {
            let whole = random.integer(0...4_000)
            let fraction = random.integer(0...999_999)
            let literal = Double("\(whole).\(fraction)")!
            // A height's half points, and a duration (0-5 s) in milliseconds.
            for value in [literal * 2, (literal / 800) * 1000] where SeriesCounts.rounded(value) != Int(value.rounded()) {
                wrong.append(value)
            }
        }
        #expect(wrong.isEmpty, "rounded differs from Int(rounded()) at \(wrong.prefix(5))")
    }
}

/// `parseNumberFast` (the member loop's number reader, with its `x.0` shortcut) against `Double(String)`
/// and against `parseNumber`, where it reads a literal followed by more of a document.
@Suite("Fast number reader")
struct FastNumberTests {
    /// The value, or the error's reason and offset, and where the reader stopped.
    static func read(_ literal: String, fast: Bool) -> String {
        let document = Array((literal + ",                \"x\"").utf8)
        return document.withUnsafeBufferPointer { buffer in
            var scanner = IntakeScanner(bytes: buffer, rules: FieldRules(maxSamples: 1), now: 0)
            do throws(IntakeScanner.ParseError) {
                let value = fast ? try scanner.parseNumberFast() : try scanner.parseNumber()
                return "\(value.bitPattern) at \(scanner.index)"
            } catch {
                return "\(error.reason) at \(error.offset)"
            }
        }
    }

    @Test func wholeDoublesAndTheirNeighbours() {
        var random = SplitMix64(seed: 0xFA57_0001)
        var literals = ["0.0", "-0.0", "0.00", "0.05", "1.0", "-1.0", "7.0e3", "7.0E-3", "12.0.", "3.0x", "00.0", "-.0",
                        "9007199254740993.0", "1234567890123456.0", "12345678901234567.0", "99999999999999999.0"]
        for _ in 0..<50_000 {
            let whole = Int(truncatingIfNeeded: random.next() >> 1) >> random.integer(0...62)
            let sign = random.integer(0...3) == 0 ? "-" : ""
            let tail = ["0", "00", "01", "0e2", "5", "05", "0"][random.integer(0...6)]
            literals.append("\(sign)\(whole).\(tail)")
        }
        var wrong: [String] = []
        for literal in literals {
            let fast = Self.read(literal, fast: true), general = Self.read(literal, fast: false)
            if fast != general { wrong.append("\(literal): fast \(fast), general \(general)") }
            // Where JSON accepts the literal (Double(String) also takes "00.0" and "-.0", JSON does not).
            if general.first?.isNumber == true, let expected = Double(literal), !fast.hasPrefix("\(expected.bitPattern) at ") {
                wrong.append("\(literal): fast \(fast), Double(String) \(expected)")
            }
        }
        #expect(wrong.isEmpty, "\(wrong.prefix(5))")
    }
}
