/// One sample's value rules. Each runs right after its field's type check
/// (the intake reads types from bytes, the reference from a tree), so the
/// first fault a sample reports is the same on both paths.
extension FieldRules {
    /// `t`: at most `maxAge` before `now`, at most `maxSkewAhead` after it.
    @inline(__always)
    public func checkTime(_ t: Double, now: Double) throws(FieldError) {
        guard t >= now - maxAge else { throw FieldError(field: "t", reason: "is older than 30 days") }
        guard t <= now + maxSkewAhead else { throw FieldError(field: "t", reason: "is more than 1 day in the future") }
    }

    /// `event` names none of show, hide, change.
    public static let unknownEvent = FieldError(field: "event", reason: "must be show, hide or change")

    /// `height`: 0 to 2000, and above 0 unless a hide or a hardware keyboard.
    @inline(__always)
    public static func checkHeight(_ height: Double, event: KeyboardEvent, hardware: Bool) throws(FieldError) {
        guard (0...2000).contains(height) else { throw FieldError(field: "height", reason: "must be between 0 and 2000") }
        if event != .hide, !hardware, height <= 0 {
            throw FieldError(field: "height", reason: "must be greater than 0 for \(event.rawValue) events without a hardware keyboard")
        }
    }

    /// `accessory_height` and `safe_area_bottom` (`field`): 0 to the height.
    @inline(__always)
    public static func checkPart(_ value: Double, of height: Double, field: String) throws(FieldError) {
        guard (0...height).contains(value) else { throw FieldError(field: field, reason: "must be between 0 and height") }
    }

    /// `duration`: 0 to 5 seconds.
    @inline(__always)
    public static func checkDuration(_ duration: Double) throws(FieldError) {
        guard (0...5).contains(duration) else { throw FieldError(field: "duration", reason: "must be between 0 and 5 seconds") }
    }

    /// `curve`: an integer from 0 to 15.
    @inline(__always)
    public static func curve(_ value: Double) throws(FieldError) -> Int {
        // In range and whole (what `value.rounded() == value` asks, without libm's `round` call).
        guard (0...15).contains(value), Double(Int(value)) == value else {
            throw FieldError(field: "curve", reason: "must be an integer between 0 and 15")
        }
        return Int(value)
    }

    /// `cold_start_ms`, when present: only on show events, above 0 and at most a minute.
    @inline(__always)
    public static func checkColdStart(_ coldStart: Double?, event: KeyboardEvent) throws(FieldError) {
        if let coldStart {
            guard event == .show else { throw FieldError(field: "cold_start_ms", reason: "is only allowed on show events") }
            guard coldStart > 0, coldStart <= 60_000 else {
                throw FieldError(field: "cold_start_ms", reason: "must be greater than 0 and at most 60000")
            }
        }
    }
}
