@testable import KBTDCore
import Testing

/// `SampleFields.typesAsExpected` (the one test that lets `checkSample` skip
/// its fourteen type checks) against the checks field by field.
@Suite("Sample fields")
struct SampleFieldsTests {
    /// Each field's kind as `checkSample` wants it.
    static let wanted: [ScannedKind] = [.number, .string, .string, .string, .string, .bool, .bool, .bool,
                                        .number, .number, .number, .number, .number, .number]
    static let required: Set<Int> = [SampleFields.t, SampleFields.event, SampleFields.language, SampleFields.orientation,
                                     SampleFields.height, SampleFields.duration, SampleFields.curve]

    @Test func packedLiterals() {
        let required = Self.required.map { ($0, Self.wanted[$0]) }
        let optional = (0..<14).filter { !Self.required.contains($0) }.map { ($0, Self.wanted[$0]) }
        #expect(SampleFields.names.count == Self.wanted.count)
        #expect(SampleFields.requiredKinds == SampleFields.kinds(required))
        #expect(SampleFields.optionalKinds == SampleFields.kinds(optional))
        #expect(SampleFields.requiredMask == SampleFields.mask(SampleFields.requiredKinds))
        #expect(SampleFields.optionalMask == SampleFields.mask(SampleFields.optionalKinds))
    }

    /// Random kinds, most fields with the wanted one (so both answers come up often).
    @Test func typesAsExpectedMatchesEachField() {
        var random = SplitMix64(seed: 0x5A3F_1E1D)
        var mismatches: [String] = []
        var answers = (yes: 0, no: 0)
        for _ in 0..<200_000 {
            var fields = SampleFields()
            var expected = true
            var kinds: [ScannedKind] = []
            for field in 0..<14 {
                let kind = random.integer(0...7) == 0 ? ScannedKind(rawValue: UInt8(random.integer(0...6)))! : Self.wanted[field]
                fields.set(field, kind, bits: UInt64(field))
                kinds.append(kind)
                let fits = kind == Self.wanted[field] || (!Self.required.contains(field) && (kind == .absent || kind == .null))
                expected = expected && fits
            }
            if expected { answers.yes += 1 } else { answers.no += 1 }
            if fields.typesAsExpected != expected, mismatches.count < 5 { mismatches.append("\(kinds): expected \(expected)") }
        }
        #expect(mismatches.isEmpty, "\(mismatches)")
        #expect(answers.yes > 10_000 && answers.no > 10_000, "both answers tested: \(answers)")
    }
}
