import Foundation
import KBTDCore
import NIOCore
import Synchronization

/// Per-client-address token buckets for ingest (429 + `Retry-After` when empty).
///
/// IPv4 peers are keyed by address, IPv6 peers by their /64 (one phone may
/// rotate through a whole /64). Loopback and Unix-socket peers are local tools
/// (the fleet simulator, benchmarks) and are exempt unless
/// `rate_limit_local_peers` is set. A rate of 0 turns the limit off.
final class ClientRateLimiter: Sendable {
    private struct State {
        var buckets: [String: TokenBucket] = [:]
        var rate: Double
        var burst: Double
        var limitLocalPeers: Bool
    }

    private let state: Mutex<State>
    private let maxTrackedClients = 100_000
    /// Seconds on a monotonic clock; the system's uptime unless a test hands in its own.
    private let uptime: @Sendable () -> Double

    init(limits: ServerSettings.Limits, uptime: @escaping @Sendable () -> Double = { ProcessInfo.processInfo.systemUptime }) {
        self.uptime = uptime
        state = Mutex(State(rate: limits.ingestRatePerSecond, burst: limits.ingestBurst,
                            limitLocalPeers: limits.rateLimitLocalPeers))
    }

    func update(_ limits: ServerSettings.Limits) {
        state.withLock { state in
            if state.rate != limits.ingestRatePerSecond || state.burst != limits.ingestBurst { state.buckets = [:] }
            state.rate = limits.ingestRatePerSecond
            state.burst = limits.ingestBurst
            state.limitLocalPeers = limits.rateLimitLocalPeers
        }
    }

    /// nil when the request may go ahead; otherwise whole seconds to wait.
    func check(_ context: KBTDRequestContext) -> Int? {
        let now = uptime()
        return state.withLock { state -> Int? in
            guard state.rate > 0 else { return nil }
            if context.isLocalPeer && !state.limitLocalPeers { return nil }
            let key = context.clientNetwork
            var bucket = state.buckets[key] ?? TokenBucket(rate: state.rate, burst: state.burst, now: now)
            let wait = bucket.take(now: now)
            state.buckets[key] = bucket
            if state.buckets.count > maxTrackedClients {
                state.buckets = state.buckets.filter { !$0.value.isFull(now: now) }
            }
            return wait.map { max(1, Int($0.rounded(.up))) }
        }
    }
}
