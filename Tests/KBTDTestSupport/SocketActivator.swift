import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// `systemd-socket-activate -l 127.0.0.1:PORT ... kbtd serve ...`: systemd's way of passing a
/// bound socket, played by systemd's own tool. It cannot bind port 0, so the port comes from
/// `ToolPorts` (a start whose port was taken is retried); it is ready once it logs "Listening on".
package final class SocketActivator {
    package let port: Int
    package let process: SpawnedProcess
    package let log: String

    package init(directory: URL, options: [String], command: [String], environment: [String: String] = [:]) throws {
        let log = directory.appendingPathComponent("activate.log").path
        self.log = log
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("KBTD_") }
        env.merge(environment) { $1 }
        let text = { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
        (port, process) = try ToolPorts.start(1, "systemd-socket-activate") { ports in
            let process = try SpawnedProcess("/usr/bin/systemd-socket-activate", ["-l", "127.0.0.1:\(ports[0])"] + options + command,
                                             stderr: log, environment: env)
            do {
                try waitForChange(of: log, "systemd-socket-activate to listen", stop: process.exited, detail: text) {
                    text().contains("Listening on")
                }
            } catch {
                process.terminate()
                if ToolPorts.saysAddressInUse(text()) { throw PortTaken(description: text()) }
                throw error
            }
            return (ports[0], process)
        }
    }

    /// Everything it (and kbtd, which inherits its stderr) logged.
    package var text: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }

    /// SIGTERM; the exit code once it has exited (SIGKILL after 90 s).
    package func stop() -> Int32 {
        kill(process.pid, SIGTERM)
        return process.wait(seconds: 90)
    }
}
