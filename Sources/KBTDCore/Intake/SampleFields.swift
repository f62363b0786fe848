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
