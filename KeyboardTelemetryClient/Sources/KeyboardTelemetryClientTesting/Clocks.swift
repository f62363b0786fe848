import Foundation
import KeyboardTelemetryClient

/// A clock the test moves by hand: `sleep` returns only when `advance` passes its deadline.
public final class ManualClock: TelemetryClock, @unchecked Sendable {  // guarded by `lock`
    private let lock = NSLock()
    private var current: Date
    private var sleepers: [UUID: (deadline: Date, continuation: CheckedContinuation<Void, any Error>)] = [:]

    public init(_ start: Date = Date()) { current = start }

    public func now() -> Date { lock.withLock { current } }

    public func sleep(for seconds: TimeInterval) async throws {
        guard seconds > 0 else { return try Task.checkCancellation() }
        let id = UUID()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let cancelled = lock.withLock { () -> Bool in
                    if Task.isCancelled { return true }
                    sleepers[id] = (current.addingTimeInterval(seconds), continuation)
                    return false
                }
                if cancelled { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            let sleeper = lock.withLock { sleepers.removeValue(forKey: id) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Tasks currently sleeping on this clock.
    public var sleeperCount: Int { lock.withLock { sleepers.count } }

    /// Moves time forward and wakes every sleeper whose deadline has passed.
    public func advance(by seconds: TimeInterval) {
        let due = lock.withLock { () -> [UUID: (deadline: Date, continuation: CheckedContinuation<Void, any Error>)] in
            current = current.addingTimeInterval(seconds)
            let due = sleepers.filter { $0.value.deadline <= current }
            for id in due.keys { sleepers.removeValue(forKey: id) }
            return due
        }
        for sleeper in due.values { sleeper.continuation.resume() }
    }
}

/// Real time for `now`, but `sleep` returns at once (after a yield) and is recorded: the test
/// sees the delays the client asked for (backoff, `Retry-After`) without waiting them out.
public final class RecordingClock: TelemetryClock, @unchecked Sendable {  // guarded by `lock`
    public init() {}
    private let lock = NSLock()
    private var requested: [TimeInterval] = []

    public func now() -> Date { Date() }

    public func sleep(for seconds: TimeInterval) async throws {
        lock.withLock { requested.append(seconds) }
        await Task.yield()
        try Task.checkCancellation()
    }

    /// Every delay asked for, in order.
    public var sleeps: [TimeInterval] { lock.withLock { requested } }
}
