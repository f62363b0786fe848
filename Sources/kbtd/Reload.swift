import ArgumentParser
import Foundation
import KBTDServer
#if canImport(Glibc)
import Glibc
#endif

/// `kbtd reload --pid PID`: the unit's `ExecReload=`. Checks the configuration
/// first, so `systemctl reload` fails (exit 78, the key named in the journal)
/// instead of signalling a daemon that would reject the file, then sends SIGHUP.
/// Built in because a minimal Debian system has no `/bin/kill` (procps).
struct Reload: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check the configuration, then ask a running daemon to re-read it (SIGHUP).")

    @Option(help: "Process id of the running daemon (under systemd: $MAINPID).")
    var pid: Int32

    @Option(help: "Config file to check before signalling (default: KBTD_CONFIG; none: check environment only).")
    var config: String?

    func validate() throws {
        guard pid > 1 else { throw ValidationError("--pid must be a process id above 1, not \(pid)") }
    }

    func run() throws {
        _ = try resolveSettings(config: config, flags: [:])
        guard kill(pid, SIGHUP) == 0 else {
            let reason = errno == ESRCH ? "no such process" : String(cString: strerror(errno))
            throw fail("cannot signal process \(pid): \(reason)", code: ExitStatus.unavailable)
        }
    }
}
