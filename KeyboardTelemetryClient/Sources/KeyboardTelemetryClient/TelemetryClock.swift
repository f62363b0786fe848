import Foundation

/// Where the client reads the time and how it waits: batch age, backoff
/// delays, `Retry-After` and the heights refresh interval all go through it,
/// so tests can drive time by hand.
public protocol TelemetryClock: Sendable {
    /// The current wall-clock time.
    func now() -> Date
    /// Suspends for `seconds` (returns at once for zero or less); throws
    /// `CancellationError` when the calling task is cancelled.
    func sleep(for seconds: TimeInterval) async throws
}

/// The real clock: `Date()` and `Task.sleep`.
public struct SystemClock: TelemetryClock {
    /// The system clock.
    public init() {}

    /// `Date()`.
    public func now() -> Date { Date() }

    /// `Task.sleep`; throws `CancellationError` when cancelled.
    public func sleep(for seconds: TimeInterval) async throws {
        guard seconds > 0 else { return try Task.checkCancellation() }
        try await Task.sleep(nanoseconds: UInt64(min(seconds, 1e9) * 1e9))
    }
}
