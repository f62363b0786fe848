import Foundation
import Synchronization

/// The IMF-fixdate for the `Date` header, formatted at most once per second.
final class HTTPDate: Sendable {
    private let cache = Mutex<(second: Int, text: String)>((-1, ""))

    func now() -> String {
        let seconds = Int(Date().timeIntervalSince1970)
        return cache.withLock { cache in
            if cache.second != seconds {
                cache = (seconds, Self.format(seconds))
            }
            return cache.text
        }
    }

    static func format(_ seconds: Int) -> String {
        let parts = UTCTime(seconds: seconds).parts
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let two = { (value: Int32) in UTCTime.padded(value, 2) }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
