import Logging
import NIOCore
import ServiceLifecycle

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
                try? await Task.sleep(for: interval)
                guard !Task.isShuttingDownGracefully else { break }
                var message = "STATUS=\(status())"
                if watchdog != nil {
                    if await healthy(within: interval) {
                        message += "\nWATCHDOG=1"
                    } else {
                        logger.warning("health probe failed: withholding WATCHDOG=1")
                    }
                }
                notify.send(message)
            }
        } onGracefulShutdown: {
            notify.send("STOPPING=1\nSTATUS=stopping: draining connections and committing the write queue")
        }
    }

    private func healthy(within interval: Duration) async -> Bool {
        for loop in eventLoops.makeIterator() {
            // Hangs (and so withholds the ping) if the loop is stuck.
            try? await loop.submit {}.get()
        }
        // The idle writer goes round every 0.5 s; older than that plus a ping interval means stuck.
        return writerHeartbeatAge() < interval + .milliseconds(500)
    }
}
