import Foundation
import KBTDCore
#if canImport(Glibc)
import Glibc
#endif

/// Paths of the built `kbtd` binary and this repository.
package enum TestPaths {
    package static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `swift test` builds every product beside the test bundle.
    package static let kbtdBinary: String = {
        if let override = ProcessInfo.processInfo.environment["KBTD_BINARY"] { return override }
        let besideTests = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("kbtd").path
        if FileManager.default.isExecutableFile(atPath: besideTests) { return besideTests }
        return repositoryRoot.appendingPathComponent(".build/debug/kbtd").path
    }()

    /// The keyboard-height tables kbtd-fleet reads (`data/` at the repository root).
    package static let fixtures = repositoryRoot.appendingPathComponent("data")

    /// A fresh temporary directory, removed by the caller's `defer`.
    package static func temporaryDirectory() -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("kbtd-test-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// Runs `kbtd` as a subprocess and collects its output.
package struct CommandResult {
    package var status: Int32
    package var stdout: String
    package var stderr: String

    package init(status: Int32, stdout: String, stderr: String) {
        self.status = status
        self.stdout = stdout
        self.stderr = stderr
    }
}

/// A command still running after `timeout` seconds is killed (SIGKILL), so a hang fails its test instead of stalling the run.
/// Output goes through files and the exit is an event (a termination handler), not a poll.
package func runKBTD(_ arguments: [String], environment: [String: String] = [:], timeout: Double = 300) throws -> CommandResult {
    var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("KBTD_") }
    env.merge(environment) { $1 }
    return try runToEnd(TestPaths.kbtdBinary, arguments, environment: env, timeout: timeout)
}

/// Runs a program to its end with Foundation's Process, stdout and stderr through files; SIGKILL after `timeout`.
/// Blocks its thread until the exit event: for `.ownThreads` suites (async code uses `runProgram`).
package func runToEnd(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
              directory workingDirectory: URL? = nil, timeout: Double) throws -> CommandResult {
    let run = try ProgramRun(executable, arguments, environment: environment, directory: workingDirectory)
    if !run.exited.wait(until: Deadline(timeout, for: "\(executable) to exit")) {
        kill(run.process.processIdentifier, SIGKILL)
        _ = run.exited.wait(until: Deadline(60, for: "\(executable) to exit after SIGKILL"))
    }
    run.process.waitUntilExit()  // returns at once: the termination handler ran
    return run.result()
}

/// The real daemon on a real socket with a real SQLite file in a temporary
/// directory. `start()` returns when the daemon says it is ready (`READY=1` on a
/// notify socket the test listens on, as systemd would), and reads the port the
/// kernel gave `127.0.0.1:0` from its "listening on" line. The exit is an event
/// (the process's termination handler), so no wait polls.
// Unchecked: start/stop/kill run on the test's own thread; concurrent workers only read `port`.
package final class TestDaemon: @unchecked Sendable {
    package let directory: URL
    package let database: String
    package let unixSocket: String
    package var extraArguments: [String]
    package var environment: [String: String]
    /// Restarts listen on the port the first run reported (SO_REUSEADDR), so a client keeps its URL.
    /// The port was the kernel's choice for port 0; while the daemon is down another process can
    /// only take it by binding port 0 and being given that very port (no test binds a fixed port).
    package let keepsPort: Bool
    package private(set) var process: Process?
    package private(set) var port = 0
    package private(set) var logPath: String
    private var runs = 0
    /// Fired by the current run's termination handler.
    private var exited = OnceEvent()

    package init(database: String? = nil, extraArguments: [String] = [], environment: [String: String] = [:], keepsPort: Bool = false) {
        directory = TestPaths.temporaryDirectory()
        self.database = database ?? directory.appendingPathComponent("kbtd.sqlite").path
        unixSocket = directory.appendingPathComponent("kbtd.sock").path
        logPath = directory.appendingPathComponent("kbtd-0.log").path
        self.extraArguments = extraArguments
        self.environment = environment
        self.keepsPort = keepsPort
    }

    deinit {
        if let process, !exited.hasFired {
            kill(process.processIdentifier, SIGKILL)
            _ = exited.wait(until: Deadline(60, for: "kbtd to exit after SIGKILL"))
        }
        try? FileManager.default.removeItem(at: directory)
    }

    /// The address of the current run's TCP listener: port 0 on the first run (or always, unless `keepsPort`).
    private var listenAddress: String {
        keepsPort && port != 0 ? "127.0.0.1:\(port)" : "127.0.0.1:0"
    }

    /// Runs the daemon and returns once it says it is ready (`launch`, then `awaitReady`).
    @discardableResult
    package func start() throws -> TestDaemon {
        try launch()
        return try awaitReady()
    }

    /// The current run's notify socket (nil when the test passes its own NOTIFY_SOCKET).
    private var notify: NotifyListener?

    /// Runs the daemon without waiting for it (a test that acts while it starts up); `awaitReady` follows.
    package func launch() throws {
        runs += 1
        logPath = directory.appendingPathComponent("kbtd-\(runs).log").path
        if !FileManager.default.fileExists(atPath: logPath) {
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        }
        // The daemon says READY=1 on NOTIFY_SOCKET once every listener accepts; a test that
        // plays systemd itself passes its own NOTIFY_SOCKET, and readiness is then its log line.
        notify = environment["NOTIFY_SOCKET"] == nil
            ? try NotifyListener(path: directory.appendingPathComponent("notify-\(runs).sock").path) : nil
        let process = Process()
        // The shell opens the log: the test process holds no file handle whose
        // lifetime (and close) could race with sockets opened on other threads.
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        // The shell's own variables are unset before the exec: kbtd warns about KBTD_* variables it does not read.
        process.arguments = ["-c", "umask ${KBTD_TEST_UMASK:-022}; log=$KBTD_TEST_LOG; unset KBTD_TEST_LOG KBTD_TEST_UMASK; "
                             + "exec \"$0\" \"$@\" >>\"$log\" 2>&1", TestPaths.kbtdBinary,
                             "serve", "--listen", listenAddress, "--unix", unixSocket, "--database", database] + extraArguments
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("KBTD_") && $0.key != "NOTIFY_SOCKET" }
        env.merge(environment) { $1 }
        env["KBTD_TEST_LOG"] = logPath
        if let notify { env["NOTIFY_SOCKET"] = notify.name }
        process.environment = env
        process.currentDirectoryURL = directory
        let exited = OnceEvent()
        process.terminationHandler = { _ in exited.fire() }
        self.exited = exited
        try process.run()
        self.process = process
    }

    /// Returns once the launched daemon says it is ready; reads its TCP port from its log.
    @discardableResult
    package func awaitReady() throws -> TestDaemon {
        guard let process else { throw HTTPTestError(description: "kbtd was not launched") }
        defer { notify = nil }  // closed: later STATUS= datagrams find no socket and are dropped
        let deadline = Deadline(60, for: "kbtd to be ready (run \(runs))")
        if let notify {
            while true {
                if let message = notify.receive(until: deadline, or: exited), message.split(separator: "\n").contains("READY=1") { break }
                if exited.hasFired {
                    process.waitUntilExit()
                    throw HTTPTestError(description: "kbtd exited with \(process.terminationStatus) before ready:\n\(log_())")
                }
                if deadline.hasPassed { throw HTTPTestError(description: deadline.failure(log_()).description) }
            }
        } else {
            do {
                try waitForChange(of: logPath, "kbtd ready", seconds: 60, stop: exited, detail: log_) { log_().contains("kbtd ready") }
            } catch {
                throw HTTPTestError(description: "\(error)")
            }
        }
        // The log is written synchronously before readiness: the "listening on" lines are there.
        for line in log_().split(separator: "\n") where line.contains("listening on 127.0.0.1:") && !line.contains("(PROXY protocol)") {
            port = Int(line.split(separator: ":").last!.prefix(while: \.isNumber)) ?? 0
        }
        return self
    }

    /// Everything the current run logged.
    package func log_() -> String {
        (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    }

    /// SIGTERM, then wait; returns the exit status. A daemon that has not
    /// exited after `seconds` is killed (its stacks are logged first) and
    /// `stop` returns `Self.hung`, so a shutdown hang fails the test instead
    /// of stalling the whole run.
    @discardableResult
    package func stop(seconds: Double = 90) -> Int32 {
        guard let process else { return -1 }
        if !exited.hasFired { kill(process.processIdentifier, SIGTERM) }
        return waitForExit(seconds: seconds)
    }

    /// What `stop` and `waitForExit` return for a daemon that did not exit in time.
    package static let hung: Int32 = -99

    /// Waits for the process's exit event; returns its status, or `Self.hung` after
    /// `seconds` (the process is then killed, after its threads' stacks are
    /// printed when gdb is installed).
    package func waitForExit(seconds: Double = 90) -> Int32 {
        guard let process else { return -1 }
        self.process = nil
        guard exited.wait(until: Deadline(seconds, for: "kbtd to exit")) else {
            Self.dumpStacks(of: process.processIdentifier)
            kill(process.processIdentifier, SIGKILL)
            _ = exited.wait(until: Deadline(60, for: "kbtd to exit after SIGKILL"))
            return Self.hung
        }
        process.waitUntilExit()  // returns at once: the termination handler ran
        return process.terminationStatus
    }

    /// True once the current run has exited (its termination handler ran).
    package var hasExited: Bool { exited.hasFired }

    /// Prints every thread's backtrace of `pid` to the test run's stderr (for a hang's diagnosis); needs gdb.
    package static func dumpStacks(of pid: Int32) {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/gdb") else { return }
        _ = try? runToEnd("/bin/sh", ["-c", "echo \"== kbtd $0 did not exit in time; its threads:\" >&2; "
                                      + "timeout 60 gdb -p \"$0\" -batch -ex 'thread apply all bt 30' >&2 2>&1", "\(pid)"], timeout: 90)
    }

    /// Sends a signal without waiting.
    package func signal(_ number: Int32) {
        if let process { kill(process.processIdentifier, number) }
    }

    /// Waits until the current run's log contains `text` (`occurrences` times), re-reading the log
    /// each time it is written (inotify), for at most `seconds`; false when it never did or the daemon exited first.
    package func waitForLog(_ text: String, occurrences: Int = 1, seconds: Double = 60) -> Bool {
        (try? waitForChange(of: logPath, "\(occurrences)× \"\(text)\" in kbtd's log", seconds: seconds, stop: exited) {
            log_().components(separatedBy: text).count - 1 >= occurrences
        }) != nil
    }

    /// Re-asks `condition` of the running daemon until it holds; throws naming `what` at the
    /// deadline, or at once when the daemon exits (see `waitUntil`).
    package func until(_ what: String, seconds: Double = 60, _ condition: () throws -> Bool) throws {
        try waitUntil(what, seconds: seconds, pace: exited, detail: { log_() }, condition)
    }

    /// SIGKILL: no chance to flush anything.
    package func kill9() {
        guard let process else { return }
        kill(process.processIdentifier, SIGKILL)
        _ = exited.wait(until: Deadline(60, for: "kbtd to exit after SIGKILL"))
        self.process = nil
    }

    package func connection(from source: String? = nil) throws -> HTTPTestConnection {
        try HTTPTestConnection(.tcp(host: "127.0.0.1", port: port), source: source)
    }

    /// The daemon's process id, once launched.
    package var pid: Int32? { process?.processIdentifier }

    /// The daemon's resident and peak memory (VmRSS, VmHWM), in MiB.
    package func memory() -> (rss: Double, peak: Double) {
        guard let pid = process?.processIdentifier,
              let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return (0, 0) }
        func field(_ name: String) -> Double {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
            return (Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) / 1024
        }
        // The shell execs kbtd, so the process's pid is the daemon's.
        return (field("VmRSS"), field("VmHWM"))
    }

    /// One series' value from `/metrics` (the first line starting with `series`).
    package func metric(_ series: String) throws -> Double? {
        let text = try get("/metrics").text
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(series + " ") }) else { return nil }
        return Double(line.split(separator: " ").last ?? "")
    }

    package func get(_ path: String, headers: [(String, String)] = []) throws -> HTTPTestResponse {
        try connection().request("GET", path, headers: headers)
    }

    /// POSTs a batch body with the given encoding headers.
    package func post(_ body: [UInt8], encoding: String? = nil, contentType: String? = "application/json",
              headers: [(String, String)] = []) throws -> HTTPTestResponse {
        var all = headers
        if let contentType { all.append(("Content-Type", contentType)) }
        if let encoding { all.append(("Content-Encoding", encoding)) }
        return try connection().request("POST", "/v1/batches", headers: all, body: body)
    }

    /// `kbtd stats --format json` against this daemon's database, parsed.
    package func stats(_ extra: [String] = []) throws -> JSONValue {
        let result = try runKBTD(["stats", "--database", database, "--format", "json"] + extra)
        guard result.status == 0 else { throw HTTPTestError(description: "kbtd stats failed: \(result.stderr)") }
        return try JSONParser.parse(Array(result.stdout.utf8))
    }
}
