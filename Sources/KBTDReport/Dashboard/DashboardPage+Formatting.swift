import Foundation
import KBTDCore

/// Escaping and number, date and key formatting for the page.
extension DashboardPage {
    static func keyAttributes(_ key: SeriesKey) -> String {
        "data-model=\"\(escape(key.model))\" data-os=\"\(key.osMajor)\" data-language=\"\(escape(key.language))\" "
            + "data-orientation=\"\(key.orientation.rawValue)\" data-keyboard-type=\"\(escape(key.keyboardType))\""
    }

    static func keyCells(_ key: SeriesKey) -> String {
        "<td>\(escape(key.model))</td><td>\(key.osMajor)</td><td>\(escape(key.language))</td>"
            + "<td>\(key.orientation.rawValue)</td><td>\(escape(key.keyboardType))</td>"
    }

    /// Text and attribute values, escaped for HTML.
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }

    /// A coordinate with at most one decimal.
    static func f(_ value: Double) -> String { fixed(value, 1) }

    static func fixed(_ value: Double, _ digits: Int) -> String { String(format: "%.\(digits)f", value) }

    /// 1234567 -> "1,234,567".
    static func group(_ value: Int64) -> String {
        let digits = String(value.magnitude)
        var out = ""
        for (i, digit) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out += "," }
            out.append(digit)
        }
        return (value < 0 ? "-" : "") + out
    }

    static func group(_ value: Int) -> String { group(Int64(value)) }

    /// "2026-11-22 21:00" for Unix seconds.
    static func utc(_ seconds: Int64) -> String {
        let days = Int(seconds.quotient(dividingBy: 86_400)), rest = Int(seconds - Int64(days) * 86_400)
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(year)-\(two(month))-\(two(day)) \(two(rest / 3600)):\(two(rest % 3600 / 60))"
    }
}

extension Int64 {
    /// Floor division (rounds toward negative infinity).
    fileprivate func quotient(dividingBy divisor: Int64) -> Int64 {
        let q = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? q - 1 : q
    }
}
