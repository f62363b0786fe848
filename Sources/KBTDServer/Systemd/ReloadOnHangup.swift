import Logging
import ServiceLifecycle
import UnixSignals

/// SIGHUP re-reads the configuration and applies what can change while
/// running; a bad file leaves the running configuration in place and the log
/// names the key at fault. Connections are never dropped.
struct ReloadOnHangup: Service {
    let load: @Sendable () throws -> ServerSettings
    let apply: @Sendable (ServerSettings) -> Void
    let logger: Logger

    func run() async throws {
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        for await _ in hangups.cancelOnGracefulShutdown() {
            do {
                let settings = try load()
                apply(settings)
                logger.notice("configuration reloaded")
            } catch {
                logger.error("configuration reload failed, keeping the running configuration: \(error)")
            }
        }
    }
}
