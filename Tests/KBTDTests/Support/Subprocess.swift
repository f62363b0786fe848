import Foundation

/// Runs a program to its end on a thread of its own (not the cooperative pool); output goes through files.
func runProgram(_ executable: String, _ arguments: [String], directory workingDirectory: URL? = nil,
                timeout: Double = 120) async throws -> CommandResult {
    try await withCheckedThrowingContinuation { continuation in
        Thread {
            let directory = TestPaths.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let outPath = directory.appendingPathComponent("stdout"), errPath = directory.appendingPathComponent("stderr")
            _ = FileManager.default.createFile(atPath: outPath.path, contents: nil)
            _ = FileManager.default.createFile(atPath: errPath.path, contents: nil)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            if let workingDirectory { process.currentDirectoryURL = workingDirectory }
            let handles: (FileHandle, FileHandle)
            do {
                handles = (try FileHandle(forWritingTo: outPath), try FileHandle(forWritingTo: errPath))
                process.standardOutput = handles.0
                process.standardError = handles.1
                try process.run()
            } catch {
                continuation.resume(throwing: error)
                return
            }
            defer { try? handles.0.close(); try? handles.1.close() }
            let deadline = Date().addingTimeInterval(timeout)
            while process.isRunning && Date() < deadline { usleep(50_000) }
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
            let stdout = (try? String(contentsOf: outPath, encoding: .utf8)) ?? ""
            let stderr = (try? String(contentsOf: errPath, encoding: .utf8)) ?? ""
            continuation.resume(returning: CommandResult(status: process.terminationStatus, stdout: stdout, stderr: stderr))
        }.start()
    }
}

/// Runs SQL through the `sqlite3` shell on `path`; returns its exit status.
func sqlite3(_ path: String, _ sql: String) throws -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
    process.arguments = [path, sql]
    try process.run()
    process.waitUntilExit()
    return process.terminationStatus
}
