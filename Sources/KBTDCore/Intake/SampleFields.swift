/// The members of one sample object the validator reads, by field: each
/// one's JSON type and, by type, its value (a number, a boolean, or for
/// strings a code: an event or orientation, or an interned string's index),
/// packed so that filling and reading them copies no more than 120 bytes.
struct SampleFields {
    static let names = [
        "t", "event", "language", "orientation", "keyboard_type", "floating", "hardware_keyboard",
        "preloaded", "height", "accessory_height", "safe_area_bottom", "duration", "curve", "cold_start_ms",
    ]
    static let t = 0, event = 1, language = 2, orientation = 3, keyboardType = 4, floating = 5, hardware = 6
    static let preloaded = 7, height = 8, accessory = 9, safeArea = 10, duration = 11, curve = 12, coldStart = 13

    /// Each field's `ScannedKind` in 4 bits (0: absent).
    private var kinds: UInt64 = 0
    /// Each field's value: a Double's bits, a boolean as 0 or 1, a code as an `Int`'s bits.
    private var values: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                         UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

    /// Each field's kind where `checkSample` wants it (4 bits a field): the
    /// required ones (t, event, language, orientation, height, duration,
    /// curve) and the optional ones, which may also be absent or null.
    /// (Literals, so reading them costs nothing; `SampleFieldsTests` checks them against `kinds(_:)` and `mask(_:)`.)
    static let requiredKinds: UInt64 = 0x0003_3003_0000_4443
    static let optionalKinds: UInt64 = 0x0030_0330_2224_0000
    static let requiredMask: UInt64 = 0x000F_F00F_0000_FFFF
    static let optionalMask: UInt64 = 0x00F0_0FF0_FFFF_0000

    /// The nibbles of `kinds` for these fields' kinds.
    static func kinds(_ pairs: [(Int, ScannedKind)]) -> UInt64 {
        pairs.reduce(0) { $0 | UInt64($1.1.rawValue) << UInt64($1.0 * 4) }
    }

    /// 0xF in each nibble of `kinds` that is not zero.
    static func mask(_ kinds: UInt64) -> UInt64 {
        (0..<16).reduce(0) { kinds >> UInt64($1 * 4) & 15 != 0 ? $0 | 15 << UInt64($1 * 4) : $0 }
    }

    /// Whether every member has its field's type: each required one present
    /// with it, each optional one absent, null or with it (no type check of
    /// `checkSample` can fail). Fields are 4-bit nibbles of `kinds`.
    @inline(__always)
    var typesAsExpected: Bool {
        guard kinds & Self.requiredMask == Self.requiredKinds else { return false }
        // Per optional nibble: zero when the kind is the expected one; zero when absent (0) or null (1).
        let other = (kinds ^ Self.optionalKinds) & Self.optionalMask
        let present = kinds & Self.optionalMask & 0xEEEE_EEEE_EEEE_EEEE
        @inline(__always) func nonZero(_ v: UInt64) -> UInt64 { (v | v >> 1 | v >> 2 | v >> 3) & 0x1111_1111_1111_1111 }
        return nonZero(other) & nonZero(present) == 0
    }

    @inline(__always)
    func kind(_ field: Int) -> ScannedKind {
        // Only `set` writes these bits, always a ScannedKind's raw value (0-6).
        unsafeBitCast(UInt8(truncatingIfNeeded: kinds &>> UInt64(field &* 4)) & 15, to: ScannedKind.self)
    }

    @inline(__always)
    func bits(_ field: Int) -> UInt64 {
        withUnsafeBytes(of: values) { $0.load(fromByteOffset: field &* 8, as: UInt64.self) }
    }

    @inline(__always)
    mutating func set(_ field: Int, _ kind: ScannedKind, bits: UInt64) {
        // `field` is 0-13 (an index into `names`).
        let shift = UInt64(truncatingIfNeeded: field &* 4)
        kinds = kinds & ~(15 &<< shift) | UInt64(kind.rawValue) &<< shift
        withUnsafeMutableBytes(of: &values) { $0.storeBytes(of: bits, toByteOffset: field &* 8, as: UInt64.self) }
    }
}
