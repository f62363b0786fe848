/// A token bucket: `rate` tokens per second up to `burst`. Time is passed in
/// (seconds on any monotonic clock), so the arithmetic is testable without waiting.
struct TokenBucket: Sendable, Equatable {
    var rate: Double
    var burst: Double
    private(set) var tokens: Double
    private(set) var updated: Double

    init(rate: Double, burst: Double, now: Double) {
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.updated = now
    }

    /// Takes one token if there is one. Otherwise returns the seconds until
    /// one will be there (for `Retry-After`).
    mutating func take(now: Double) -> Double? {
        refill(now: now)
        if tokens >= 1 {
            tokens -= 1
            return nil
        }
        return rate > 0 ? (1 - tokens) / rate : .infinity
    }

    /// True when the bucket is full again, so forgetting it loses nothing.
    func isFull(now: Double) -> Bool {
        tokens + max(0, now - updated) * rate >= burst
    }

    mutating func refill(now: Double) {
        tokens = min(burst, tokens + max(0, now - updated) * rate)
        updated = now
    }
}
