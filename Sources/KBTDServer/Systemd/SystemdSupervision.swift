import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// Talks to systemd while the daemon runs: `READY=1` once the database is
/// open and every listener accepts, `STATUS=` with live counters,
/// `WATCHDOG=1` every `WATCHDOG_USEC`/2, `STOPPING=1` on SIGTERM.
///
/// A watchdog ping is sent only after a health probe passes: every event loop
/// runs a submitted task, and the writer thread went round its loop recently.
/// A stuck event loop makes the probe hang and a stuck commit makes it fail,
/// so the pings stop and systemd restarts the daemon: never a free-running timer.
struct SystemdSupervision: Service {
    let notify: SystemdNotify
    let watchdog: Duration?
    let ready: ReadinessGate
    let eventLoops: any EventLoopGroup
    let writerHeartbeatAge: @Sendable () -> Duration
    let status: @Sendable () -> String
    let logger: Logger

    func run() async throws {
        await ready.wait()
        notify.send("READY=1\nSTATUS=\(status())")
        logger.info("notified systemd: READY=1", metadata: watchdog.map { ["watchdog": "\($0)"] } ?? [:])
        let interval = watchdog.map { $0 / 2 } ?? .seconds(5)
        await withGracefulShutdownHandler {
            while !Task.isShuttingDownGracefully && !Task.isCancelled {
                // Ends at SIGTERM: a plain sleep held every stop for up to WatchdogSec/2 (15 s).
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
                guard !Task.isShuttingDownGracefully else { break }
                var message = "STATUS=\(status())"
                if watchdog != nil {
                    if let stall = await stall(within: interval) {
                        // Said before systemd's SIGABRT, so the journal records where it stuck.
                        logger.error("health probe failed, withholding WATCHDOG=1: \(stall)")
                        message = "STATUS=stalled: \(stall)"
                    } else {
                        message += "\nWATCHDOG=1"
                    }
                }
                notify.send(message)
            }
        } onGracefulShutdown: {
            notify.send("STOPPING=1\nSTATUS=stopping: draining connections and committing the write queue")
        }
    }

    /// nil when healthy, else what is stuck. Each probe waits at most `interval`,
    /// so a wedged event loop is named instead of hanging the probe.
    private func stall(within interval: Duration) async -> String? {
        // At least 2 s: a loaded machine may take a moment, and short test intervals must not misfire.
        let limit = max(interval, .seconds(2))
        for (index, loop) in eventLoops.makeIterator().enumerated() {
            guard await Self.runs(loop, within: limit) else {
                return "event loop \(index) (\(loop)) did not run a task within \(limit)"
            }
        }
        // The idle writer goes round every 0.5 s; older than that plus a ping interval means stuck.
        let age = writerHeartbeatAge()
        guard age < interval + .milliseconds(500) else {
            return "the writer thread has not gone round its loop for \(age) (a commit stuck in SQLite or on the disk)"
        }
        return nil
    }

    /// Whether `loop` runs a submitted task within `limit`: the first of the task and a timer answers.
    private static func runs(_ loop: any EventLoop, within limit: Duration) async -> Bool {
        await withCheckedContinuation { continuation in
            let once = ResumeOnce(continuation)
            let timer = Task {
                try? await Task.sleep(for: limit)
                once.resume(false)
            }
            loop.execute {
                once.resume(true)
                timer.cancel()
            }
        }
    }
}

/// Resumes a continuation exactly once, whichever caller comes first.
private final class ResumeOnce: Sendable {
    private let continuation: Mutex<CheckedContinuation<Bool, Never>?>

    init(_ continuation: CheckedContinuation<Bool, Never>) { self.continuation = Mutex(continuation) }

    func resume(_ value: Bool) {
        continuation.withLock { pending in
            let taken = pending
            pending = nil
            return taken
        }?.resume(returning: value)
    }
}
