import Foundation

/// A moment broken down in UTC (`gmtime_r`): what the `Date` header and the
/// log's timestamps are written from.
struct UTCTime {
    let parts: tm

    init(seconds: Int) {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        self.parts = parts
    }

    /// `value` in decimal, zero-padded to `width` digits.
    static func padded(_ value: Int32, _ width: Int = 2) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, width - text.count)) + text
    }
}
