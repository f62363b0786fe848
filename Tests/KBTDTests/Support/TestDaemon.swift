import Foundation
import KBTDCore
#if canImport(Glibc)
import Glibc
#endif

/// Paths of the built `kbtd` binary and this repository.
enum TestPaths {
    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `swift test` builds every product beside the test bundle.
    static let kbtdBinary: String = {
        if let override = ProcessInfo.processInfo.environment["KBTD_BINARY"] { return override }
        let besideTests = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("kbtd").path
        if FileManager.default.isExecutableFile(atPath: besideTests) { return besideTests }
        return repositoryRoot.appendingPathComponent(".build/debug/kbtd").path
    }()

    /// The keyboard-height tables kbtd-fleet reads (`data/` at the repository root).
    static let fixtures = repositoryRoot.appendingPathComponent("data")

    /// A fresh temporary directory, removed by the caller's `defer`.
    static func temporaryDirectory() -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("kbtd-test-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// Runs `kbtd` as a subprocess and collects its output.
struct CommandResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// A command still running after `timeout` seconds is killed (SIGKILL), so a hang fails its test instead of stalling the run.
func runKBTD(_ arguments: [String], environment: [String: String] = [:], timeout: Double = 300) throws -> CommandResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: TestPaths.kbtdBinary)
    process.arguments = arguments
    var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("KBTD_") }
    env.merge(environment) { $1 }
    process.environment = env
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    let pid = process.processIdentifier
    let watchdog = DispatchWorkItem { kill(pid, SIGKILL) }
    DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: watchdog)
    let stdout = out.fileHandleForReading.readDataToEndOfFile()
    let stderr = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    watchdog.cancel()
    return CommandResult(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                         stderr: String(decoding: stderr, as: UTF8.self))
}

/// The real daemon on a real socket with a real SQLite file in a temporary
/// directory. `start()` waits for the "kbtd ready" log line and learns the
/// port the kernel gave `127.0.0.1:0`.
// Unchecked: start/stop/kill run on the test's own thread; concurrent workers only read `port`.
final class TestDaemon: @unchecked Sendable {
    let directory: URL
    let database: String
    let unixSocket: String
    var extraArguments: [String]
    var environment: [String: String]
    private(set) var process: Process?
    private(set) var port = 0
    private(set) var logPath: String
    private var runs = 0

    init(database: String? = nil, extraArguments: [String] = [], environment: [String: String] = [:]) {
        directory = TestPaths.temporaryDirectory()
        self.database = database ?? directory.appendingPathComponent("kbtd.sqlite").path
        unixSocket = directory.appendingPathComponent("kbtd.sock").path
        logPath = directory.appendingPathComponent("kbtd-0.log").path
        self.extraArguments = extraArguments
        self.environment = environment
    }

    deinit {
        if let process, process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: directory)
    }

    @discardableResult
    func start() throws -> TestDaemon {
        runs += 1
        logPath = directory.appendingPathComponent("kbtd-\(runs).log").path
        if !FileManager.default.fileExists(atPath: logPath) {
            _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        }
        let process = Process()
        // The shell opens the log: the test process holds no file handle whose
        // lifetime (and close) could race with sockets opened on other threads.
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "umask ${KBTD_TEST_UMASK:-022}; exec \"$0\" \"$@\" >>\"$KBTD_TEST_LOG\" 2>&1", TestPaths.kbtdBinary,
                             "serve", "--listen", "127.0.0.1:0", "--unix", unixSocket, "--database", database] + extraArguments
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("KBTD_") }
        env.merge(environment) { $1 }
        env["KBTD_TEST_LOG"] = logPath
        process.environment = env
        process.currentDirectoryURL = directory
        try process.run()
        self.process = process
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let text = log_()
            if text.contains("kbtd ready") {
                for line in text.split(separator: "\n") where line.contains("listening on 127.0.0.1:") && !line.contains("(PROXY protocol)") {
                    port = Int(line.split(separator: ":").last!.prefix(while: \.isNumber)) ?? 0
                }
                return self
            }
            guard process.isRunning else {
                throw HTTPTestError(description: "kbtd exited with \(process.terminationStatus) before ready:\n\(text)")
            }
            usleep(20_000)
        }
        throw HTTPTestError(description: "kbtd not ready after 60 s:\n\(log_())")
    }

    /// Everything the current run logged.
    func log_() -> String {
        (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    }

    /// SIGTERM, then wait; returns the exit status. A daemon that has not
    /// exited after `seconds` is killed (its stacks are logged first) and
    /// `stop` returns `Self.hung`, so a shutdown hang fails the test instead
    /// of stalling the whole run.
    @discardableResult
    func stop(seconds: Double = 90) -> Int32 {
        guard let process else { return -1 }
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        return waitForExit(seconds: seconds)
    }

    /// What `stop` and `waitForExit` return for a daemon that did not exit in time.
    static let hung: Int32 = -99

    /// Waits for the process to exit; returns its status, or `Self.hung` after
    /// `seconds` (the process is then killed, after its threads' stacks are
    /// printed when gdb is installed).
    func waitForExit(seconds: Double = 90) -> Int32 {
        guard let process else { return -1 }
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        self.process = nil
        guard !process.isRunning else {
            Self.dumpStacks(of: process.processIdentifier)
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return Self.hung
        }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Prints every thread's backtrace of `pid` to the test run's stderr (for a hang's diagnosis); needs gdb.
    static func dumpStacks(of pid: Int32) {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/gdb") else { return }
        let gdb = Process()
        gdb.executableURL = URL(fileURLWithPath: "/bin/sh")
        gdb.arguments = ["-c", "echo \"== kbtd $0 did not exit in time; its threads:\" >&2; "
                         + "timeout 60 gdb -p \"$0\" -batch -ex 'thread apply all bt 30' >&2 2>&1", "\(pid)"]
        try? gdb.run()
        gdb.waitUntilExit()
    }

    /// Sends a signal without waiting.
    func signal(_ number: Int32) {
        if let process { kill(process.processIdentifier, number) }
    }

    /// Waits until the current run's log contains `text` (`occurrences` times), for at most `seconds`.
    func waitForLog(_ text: String, occurrences: Int = 1, seconds: Double = 60) -> Bool {
        eventually(seconds: seconds) { log_().components(separatedBy: text).count - 1 >= occurrences }
    }

    /// SIGKILL: no chance to flush anything.
    func kill9() {
        guard let process else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
    }

    func connection(from source: String? = nil) throws -> HTTPTestConnection {
        try HTTPTestConnection(.tcp(host: "127.0.0.1", port: port), source: source)
    }

    /// The daemon's resident and peak memory (VmRSS, VmHWM), in MiB.
    func memory() -> (rss: Double, peak: Double) {
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
    func metric(_ series: String) throws -> Double? {
        let text = try get("/metrics").text
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(series + " ") }) else { return nil }
        return Double(line.split(separator: " ").last ?? "")
    }

    func get(_ path: String, headers: [(String, String)] = []) throws -> HTTPTestResponse {
        try connection().request("GET", path, headers: headers)
    }

    /// POSTs a batch body with the given encoding headers.
    func post(_ body: [UInt8], encoding: String? = nil, contentType: String? = "application/json",
              headers: [(String, String)] = []) throws -> HTTPTestResponse {
        var all = headers
        if let contentType { all.append(("Content-Type", contentType)) }
        if let encoding { all.append(("Content-Encoding", encoding)) }
        return try connection().request("POST", "/v1/batches", headers: all, body: body)
    }

    /// `kbtd stats --format json` against this daemon's database, parsed.
    func stats(_ extra: [String] = []) throws -> JSONValue {
        let result = try runKBTD(["stats", "--database", database, "--format", "json"] + extra)
        guard result.status == 0 else { throw HTTPTestError(description: "kbtd stats failed: \(result.stderr)") }
        return try JSONParser.parse(Array(result.stdout.utf8))
    }
}
