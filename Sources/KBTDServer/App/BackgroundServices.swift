import KBTDPostgres
import Logging
import ServiceLifecycle

/// The PostgreSQL index catch-up as a service: it polls other nodes' commits
/// until its service group shuts down gracefully, which cancels the loop
/// (the poll under way finishes first), and then returns.
struct IndexCatchUpService: Service {
    let catchUp: IndexCatchUp

    func run() async throws {
        await cancelWhenGracefulShutdown { await catchUp.run() }
    }
}

/// Makes the live index's release decisions ahead of the questions that need them, after
/// start-up and after every change (`LiveHeights.settleReleaseDecisions`), so that the first
/// answer for a keyboard on a release reads a decision instead of walking every model.
struct ReleaseDecisionService: Service {
    let heights: LiveHeights
    let logger: Logger

    func run() async throws {
        await cancelWhenGracefulShutdown {
            var first = true
            for await _ in heights.indexChanges {
                let start = ContinuousClock.now
                let worked = await heights.settleReleaseDecisions()
                if first || worked {
                    logger.log(level: first ? .info : .debug, "release decisions settled in \(ContinuousClock.now - start)")
                }
                first = false
            }
        }
    }
}

/// The app's own long-running work (the release decisions; the index catch-up, PostgreSQL
/// only) in a service group of its own: started with the app, stopped by
/// `KBTDApp.shutdown()` (a graceful shutdown the group's run is awaited
/// through), so nothing keeps polling a database the app has let go. It
/// needs no socket and no signal, so in-process apps run it too.
final class BackgroundServices: Sendable {
    private let group: ServiceGroup
    private let running: Task<Void, Never>

    init(_ services: [any Service], logger: Logger) {
        let group = ServiceGroup(configuration: .init(
            services: services.map { .init(service: $0, successTerminationBehavior: .ignore) }, logger: logger))
        self.group = group
        running = Task {
            do {
                try await group.run()
            } catch {
                logger.error("background services stopped: \(error)")
            }
        }
    }

    /// Shuts the services down and returns once every one has returned.
    func shutdown() async {
        await group.triggerGracefulShutdown()
        await running.value
    }
}
