import Foundation
import KeyboardTelemetryClient

/// Spaces batch uploads (`POST`s) fleet-wide to at most `rate` per second;
/// other requests (height lookups) pass straight through.
final class PacedTransport: TelemetryTransport {
    private let inner: any TelemetryTransport
    private let pacer: Pacer

    init(_ inner: any TelemetryTransport, batchesPerSecond rate: Double) {
        self.inner = inner
        pacer = Pacer(interval: 1 / rate)
    }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
        if request.method == "POST" { try await pacer.wait() }
        return try await inner.send(request)
    }

    /// Hands out send slots `interval` apart.
    actor Pacer {
        let interval: Duration
        private var next = ContinuousClock.now

        init(interval seconds: Double) { interval = .nanoseconds(Int64(seconds * 1e9)) }

        func wait() async throws {
            let now = ContinuousClock.now
            let slot = max(next, now)
            next = slot + interval
            if slot > now { try await Task.sleep(until: slot, clock: .continuous) }
        }
    }
}
