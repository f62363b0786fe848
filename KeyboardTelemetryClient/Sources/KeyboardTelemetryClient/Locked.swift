import Foundation

/// A value guarded by an `NSLock`: the client's synchronous entry points
/// (`record`, `estimatedHeight`) run on the caller's thread, often the main
/// thread, and must never wait on anything but this short critical section.
///
/// `NSLock` rather than `Synchronization.Mutex` so the library also builds for
/// iOS releases before 18.
final class Locked<Value>: @unchecked Sendable {  // every access goes through `lock`
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
