import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs a program to its end without holding a thread: the termination handler resumes the
/// caller; a Dispatch timer kills it (SIGTERM) after `timeout`. Output goes through files.
package func runProgram(_ executable: String, _ arguments: [String], directory workingDirectory: URL? = nil,
                timeout: Double = 120) async throws -> CommandResult {
    let directory = TestPaths.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let outPath = directory.appendingPathComponent("stdout"), errPath = directory.appendingPathComponent("stderr")
    _ = FileManager.default.createFile(atPath: outPath.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errPath.path, contents: nil)
    let out = try FileHandle(forWritingTo: outPath), err = try FileHandle(forWritingTo: errPath)
    defer { try? out.close(); try? err.close() }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let workingDirectory { process.currentDirectoryURL = workingDirectory }
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = out
    process.standardError = err
    let exited = OnceEvent()
    process.terminationHandler = { _ in exited.fire() }
    try process.run()
    let pid = process.processIdentifier
    let watchdog = DispatchWorkItem { if !exited.hasFired { kill(pid, SIGTERM) } }
    DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: watchdog)
    await exited.wait()
    watchdog.cancel()
    return CommandResult(status: process.terminationStatus,
                         stdout: (try? String(contentsOf: outPath, encoding: .utf8)) ?? "",
                         stderr: (try? String(contentsOf: errPath, encoding: .utf8)) ?? "")
}

/// Runs SQL through the `sqlite3` shell on `path`; returns its exit status.
package func sqlite3(_ path: String, _ sql: String) throws -> Int32 {
    try runToEnd("/usr/bin/sqlite3", [path, sql], timeout: 120).status
}
