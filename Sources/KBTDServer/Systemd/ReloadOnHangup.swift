import Logging
import ServiceLifecycle
import UnixSignals

/// SIGHUP re-reads the configuration and applies what can change while
/// running; a bad file leaves the running configuration in place and the log
/// names the key at fault. Connections are never dropped.
struct ReloadOnHangup: Service {
    /// Created before the listeners start, so a SIGHUP right after READY never
    /// meets the default action (terminate).
    let hangups: UnixSignalsSequence
    let load: @Sendable () throws -> ServerSettings
    let apply: @Sendable (ServerSettings) -> Void
    let logger: Logger

    func run() async throws {
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
