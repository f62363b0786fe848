import NIOCore
import Synchronization

/// Caps concurrent connections across all listeners: past the cap a new
/// connection is closed at once, before any byte is read.
final class ConnectionLimiter: Sendable {
    private let open = Atomic<Int>(0)
    private let maximum: Mutex<Int>

    init(maximum: Int) {
        self.maximum = Mutex(maximum)
    }

    func setMaximum(_ value: Int) { maximum.withLock { $0 = value } }

    /// True when the connection may stay; it is then counted until it closes.
    func admit(_ channel: any Channel) -> Bool {
        let limit = maximum.withLock { $0 }
        let now = open.wrappingAdd(1, ordering: .relaxed).newValue
        guard now <= limit else {
            open.wrappingSubtract(1, ordering: .relaxed)
            return false
        }
        channel.closeFuture.whenComplete { [self] _ in
            open.wrappingSubtract(1, ordering: .relaxed)
        }
        return true
    }
}
