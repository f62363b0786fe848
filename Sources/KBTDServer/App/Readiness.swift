import ServiceLifecycle
import Synchronization

/// Whether the daemon should be sent traffic (`GET /readyz`), apart from whether it lives
/// (`/healthz`). The index is loaded before any listener binds, so what can still make a
/// serving daemon unready is its store (checked per request) and a graceful shutdown, which
/// this records: from SIGTERM on, `/readyz` answers 503 while connections are still served.
final class Readiness: Sendable {
    private let stopping = Mutex(false)

    var isShuttingDown: Bool { stopping.withLock { $0 } }

    func beginShutdown() { stopping.withLock { $0 = true } }
}

/// Turns readiness off at the start of a graceful shutdown, then holds the shutdown for
/// `shutdown_delay_seconds` while the listeners still serve. Last in the daemon's service
/// list, so the service group tells it first (it shuts services down in reverse order, each
/// after the one before has returned): readiness is 503 before any connection drains.
struct ReadinessService: Service {
    let readiness: Readiness
    let delaySeconds: @Sendable () -> Int

    func run() async throws {
        // Returns at the graceful shutdown (CancellationError when the group is cancelled instead).
        try await gracefulShutdown()
        readiness.beginShutdown()
        let delay = delaySeconds()
        if delay > 0 { try await Task.sleep(for: .seconds(delay)) }
    }
}
