import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A child process started with posix_spawn and reaped with waitpid.
///
/// Foundation's Process is avoided for the TLS and proxy tests' helpers: with
/// several tests spawning short programs at once its child monitor was seen
/// to stop reaping (zombies, `waitUntilExit` never returning). The child gets
/// an empty signal mask and default handlers, whatever the test runner's
/// threads block, so SIGTERM stops it.
package final class SpawnedProcess: @unchecked Sendable {  // pid is set once in init; `status` is written before `exited` fires
    package let pid: pid_t
    private var status: Int32?
    /// Fired when the child has exited and been reaped (by a thread blocked in waitpid for it alone).
    package let exited = OnceEvent()

    /// stdin is /dev/null; stdout and stderr go to the given files (nil: /dev/null); the environment is the test's unless given.
    package init(_ executable: String, _ arguments: [String], stdout: String? = nil, stderr: String? = nil,
         environment: [String: String]? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, stderr ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t(), all = sigset_t()
        sigemptyset(&empty)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envp: [UnsafeMutablePointer<CChar>?]? = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { envp?.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = envp.map { posix_spawn(&pid, executable, &actions, &attributes, argv, $0) }
            ?? posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        guard spawned == 0 else { throw HTTPTestError(description: "cannot run \(executable): error \(spawned)") }
        self.pid = pid
        // The reaper: a thread of its own blocked in waitpid for this child only, so the exit is
        // an event (`exited`) rather than something polled for.
        let child = pid
        let reaper = Thread { [self] in
            var raw: Int32 = 0
            while waitpid(child, &raw, 0) == -1 && errno == EINTR {}
            status = raw
            exited.fire()
        }
        reaper.name = "kbtd-test-reaper-\(child)"
        reaper.start()
    }

    deinit { terminate() }

    /// The exit code (128 + signal when killed), once it has exited; nil while it runs.
    package func exitCode() -> Int32? {
        guard exited.hasFired, let status else { return nil }
        // WIFEXITED/WEXITSTATUS are macros: the code is in bits 8-15 when the low 7 bits are 0.
        return status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    /// Waits up to `seconds` for the exit event; then SIGKILL. Returns the exit code.
    @discardableResult
    package func wait(seconds: Double) -> Int32 {
        if !exited.wait(until: Deadline(seconds, for: "process \(pid) to exit")) {
            kill(pid, SIGKILL)
            _ = exited.wait(until: Deadline(60, for: "process \(pid) to exit after SIGKILL"))
        }
        return exitCode() ?? -1
    }

    /// Waits up to `seconds` for the exit (then SIGKILL): the exit code and the child's peak
    /// resident memory in MiB, the largest `VmHWM` read from /proc while it ran (sampled every
    /// 10 ms, and the wait ends on the exit event). Not wait4's `ru_maxrss`: Linux carries the
    /// spawning process's own peak into the child's at exec, so a child of a large test process
    /// would report the test's memory.
    package func waitForPeakMemory(seconds: Double) -> (code: Int32, peakMiB: Double) {
        let deadline = Deadline(seconds, for: "process \(pid) to exit")
        var peakKiB = 0.0
        while !exited.hasFired {
            if let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
               let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
               let kib = Double(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") {
                peakKiB = max(peakKiB, kib)
            }
            if deadline.hasPassed {
                kill(pid, SIGKILL)
                _ = exited.wait(until: Deadline(60, for: "process \(pid) to exit after SIGKILL"))
                break
            }
            waitReadable([exited.readEnd], until: deadline, cap: 10)  // the next sample, or the exit
        }
        return (exitCode() ?? -1, peakKiB / 1024)
    }

    /// SIGTERM, five seconds, then SIGKILL; reaped either way.
    package func terminate() {
        guard !exited.hasFired else { return }
        kill(pid, SIGTERM)
        wait(seconds: 5)
    }
}

/// Runs a program to its end (SIGKILL after `timeout` seconds) and collects its output.
package func spawnAndWait(_ executable: String, _ arguments: [String], timeout: Double) throws -> CommandResult {
    let directory = TestPaths.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let outPath = directory.appendingPathComponent("stdout").path, errPath = directory.appendingPathComponent("stderr").path
    let process = try SpawnedProcess(executable, arguments, stdout: outPath, stderr: errPath)
    let code = process.wait(seconds: timeout)
    return CommandResult(status: code, stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
                         stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")
}
