/// One member of a sample: its type and, by type, its value (a number, a
/// boolean, or for strings a code: an event or orientation, or an interned string's index).
struct SampleSlot {
    var kind: ScannedKind = .absent
    var number: Double = 0
    var flag = false
    var code = 0
}

/// The members of one sample object the validator reads, by field.
struct SampleFields {
    static let names = [
        "t", "event", "language", "orientation", "keyboard_type", "floating", "hardware_keyboard",
        "preloaded", "height", "accessory_height", "safe_area_bottom", "duration", "curve", "cold_start_ms",
    ]
    static let t = 0, event = 1, language = 2, orientation = 3, keyboardType = 4, floating = 5, hardware = 6
    static let preloaded = 7, height = 8, accessory = 9, safeArea = 10, duration = 11, curve = 12, coldStart = 13

    var slots = (SampleSlot(), SampleSlot(), SampleSlot(), SampleSlot(), SampleSlot(), SampleSlot(), SampleSlot(),
                 SampleSlot(), SampleSlot(), SampleSlot(), SampleSlot(), SampleSlot(), SampleSlot(), SampleSlot())

    subscript(field: Int) -> SampleSlot {
        get {
            switch field {
            case 0: slots.0
            case 1: slots.1
            case 2: slots.2
            case 3: slots.3
            case 4: slots.4
            case 5: slots.5
            case 6: slots.6
            case 7: slots.7
            case 8: slots.8
            case 9: slots.9
            case 10: slots.10
            case 11: slots.11
            case 12: slots.12
            default: slots.13
            }
        }
        set {
            switch field {
            case 0: slots.0 = newValue
            case 1: slots.1 = newValue
            case 2: slots.2 = newValue
            case 3: slots.3 = newValue
            case 4: slots.4 = newValue
            case 5: slots.5 = newValue
            case 6: slots.6 = newValue
            case 7: slots.7 = newValue
            case 8: slots.8 = newValue
            case 9: slots.9 = newValue
            case 10: slots.10 = newValue
            case 11: slots.11 = newValue
            case 12: slots.12 = newValue
            default: slots.13 = newValue
            }
        }
    }
}
