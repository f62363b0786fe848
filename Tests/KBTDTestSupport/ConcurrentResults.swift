import Foundation

/// Collects values from concurrent workers; `onCount` runs an action the moment the n-th
/// value arrives (the event a scenario waits for: "once 20 batches are acknowledged").
package final class ConcurrentResults<T: Sendable>: @unchecked Sendable {  // guarded by `lock`
    private let lock = NSLock()
    private var storage: [T] = []
    private var actions: [(count: Int, action: @Sendable () -> Void)] = []

    package init() {}

    package func append(_ value: T) {
        lock.lock()
        storage.append(value)
        let count = storage.count
        let due = actions.filter { $0.count == count }
        lock.unlock()
        for item in due { item.action() }
    }

    package var values: [T] { lock.lock(); defer { lock.unlock() }; return storage }

    /// Runs `action` on the appending thread when the `count`-th value is appended
    /// (at once, on this thread, when that many are already in).
    package func onCount(_ count: Int, _ action: @escaping @Sendable () -> Void) {
        lock.lock()
        let already = storage.count >= count
        if !already { actions.append((count, action)) }
        lock.unlock()
        if already { action() }
    }
}
