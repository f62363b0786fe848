import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A program started with its output going to files, and its exit as an event (the
/// termination handler fires it): what `runProgram` and `runToEnd` share.
struct ProgramRun {
    let process = Process()
    let exited = OnceEvent()
    private let directory = TestPaths.temporaryDirectory()
    private let outPath: URL, errPath: URL
    private let out: FileHandle, err: FileHandle

    init(_ executable: String, _ arguments: [String], environment: [String: String]?, directory workingDirectory: URL?) throws {
        outPath = directory.appendingPathComponent("stdout")
        errPath = directory.appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: outPath.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath.path, contents: nil)
        out = try FileHandle(forWritingTo: outPath)
        err = try FileHandle(forWritingTo: errPath)
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let workingDirectory { process.currentDirectoryURL = workingDirectory }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = out
        process.standardError = err
        let exited = exited
        process.terminationHandler = { _ in exited.fire() }
        do { try process.run() } catch { finish(); throw error }
    }

    /// Once the exit event fired: the status and both outputs; the files are removed.
    func result() -> CommandResult {
        defer { finish() }
        return CommandResult(status: process.terminationStatus,
                             stdout: (try? String(contentsOf: outPath, encoding: .utf8)) ?? "",
                             stderr: (try? String(contentsOf: errPath, encoding: .utf8)) ?? "")
    }

    private func finish() {
        try? out.close()
        try? err.close()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Runs a program to its end without holding a thread: the termination handler resumes the
/// caller; a Dispatch timer kills it (SIGTERM) after `timeout`. Output goes through files.
package func runProgram(_ executable: String, _ arguments: [String], directory workingDirectory: URL? = nil,
                environment: [String: String]? = nil, timeout: Double = 120) async throws -> CommandResult {
    let run = try ProgramRun(executable, arguments, environment: environment, directory: workingDirectory)
    let pid = run.process.processIdentifier, exited = run.exited
    let watchdog = DispatchWorkItem { if !exited.hasFired { kill(pid, SIGTERM) } }
    DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: watchdog)
    await exited.wait()
    watchdog.cancel()
    return run.result()
}

/// Runs SQL through the `sqlite3` shell on `path`; returns its exit status.
package func sqlite3(_ path: String, _ sql: String) throws -> Int32 {
    try runToEnd("/usr/bin/sqlite3", [path, sql], timeout: 120).status
}
