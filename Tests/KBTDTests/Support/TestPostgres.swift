import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PostgreSQL cluster for one test: `initdb` into a temporary
/// directory, `pg_ctl start` on a free loopback port with its socket in that
/// directory, stopped (immediate) and removed by `deinit`. As root the server
/// runs as the unprivileged `postgres` user, as Debian's own tools do.
///
/// `TestPostgres.binaries` is nil where PostgreSQL is not installed; the
/// PostgreSQL tests are then disabled (CI installs it: `scripts/dev deps`).
// Unchecked: start/stop/restart run on the test's own thread; workers only read `url`.
final class TestPostgres: @unchecked Sendable {
    /// The directory holding `initdb` and `pg_ctl` (Debian: /usr/lib/postgresql/N/bin), or nil.
    static let binaries: String? = {
        if let override = ProcessInfo.processInfo.environment["KBTD_TEST_PG_BIN"] { return override }
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted()
        for version in versions.reversed() where FileManager.default.isExecutableFile(atPath: "\(root)/\(version)/bin/pg_ctl") {
            return "\(root)/\(version)/bin"
        }
        return nil
    }()

    static var available: Bool { binaries != nil }

    let directory: URL
    let dataDirectory: String
    let port: Int
    /// Runs server commands as this user (nil: as ourselves, when not root).
    private let serverUser: String?

    /// A `postgres://` URL of the `kbtd` database over TCP (no password: trust authentication).
    var url: String { "postgres://kbtd@127.0.0.1:\(port)/kbtd" }
    /// The same database through the Unix socket directory (`host=` query parameter).
    var socketURL: String { "postgres://kbtd@localhost/kbtd?host=\(directory.path)&port=\(port)" }

    init() throws {
        guard let bin = Self.binaries else { throw HTTPTestError(description: "PostgreSQL is not installed") }
        directory = TestPaths.temporaryDirectory()
        dataDirectory = directory.appendingPathComponent("data").path
        port = Self.freePort()
        serverUser = getuid() == 0 ? "postgres" : nil
        if serverUser != nil {
            // The server refuses to run as root, and its directories must belong to its user.
            chmod(directory.path, 0o755)
            try Self.run("/bin/chown", ["postgres:postgres", directory.path])
        }
        try runServer("\(bin)/initdb", ["-D", dataDirectory, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"])
        // Small and fast: tests never need durability of the cluster itself beyond a clean stop,
        // but kill -9 tests rely on fsync of commits, which stays on (the default).
        let conf = """

            listen_addresses = '127.0.0.1'
            port = \(port)
            unix_socket_directories = '\(directory.path)'
            max_connections = 60
            shared_buffers = 32MB
            logging_collector = off
            """
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: dataDirectory + "/postgresql.conf"))
        handle.seekToEndOfFile()
        handle.write(Data(conf.utf8))
        try handle.close()
        try start()
        try psql("postgres", "CREATE ROLE kbtd LOGIN")
        try psql("postgres", "CREATE DATABASE kbtd OWNER kbtd")
    }

    deinit {
        if let bin = Self.binaries {
            try? runServer("\(bin)/pg_ctl", ["-D", dataDirectory, "-m", "immediate", "-w", "stop"])
        }
        try? FileManager.default.removeItem(at: directory)
    }

    func start() throws {
        // Not through Foundation's Process: the daemonized server would inherit the descriptor
        // Process watches for the child's end (and its stdout/stderr pipes), and the wait would never end.
        let tool = "\(Self.binaries!)/pg_ctl"
        let arguments = ["-D", dataDirectory, "-l", directory.path + "/server.log", "-w", "-t", "60", "start"]
        let status = serverUser.map { Self.spawnAndWait("/usr/sbin/runuser", ["-u", $0, "--", tool] + arguments) }
            ?? Self.spawnAndWait(tool, arguments)
        guard status == 0 else {
            let log = (try? String(contentsOfFile: directory.path + "/server.log", encoding: .utf8)) ?? ""
            throw HTTPTestError(description: "pg_ctl start exited \(status):\n\(log)")
        }
    }

    /// posix_spawn with stdin, stdout and stderr on /dev/null; waits and returns the exit status.
    static func spawnAndWait(_ tool: String, _ arguments: [String]) -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for fd: Int32 in [0, 1, 2] {
            posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        let argv: [UnsafeMutablePointer<CChar>?] = ([tool] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, tool, &actions, nil, argv, environ) == 0 else { return -1 }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        return (status & 0x7f) == 0 ? (status >> 8) & 0xff : -1
    }

    /// Stops the server (`fast`: disconnects clients, then a clean shutdown).
    func stop(mode: String = "fast") throws {
        try runServer("\(Self.binaries!)/pg_ctl", ["-D", dataDirectory, "-m", mode, "-w", "-t", "60", "stop"])
    }

    /// Runs SQL through `psql` on the Unix socket; returns its unaligned output.
    @discardableResult
    func psql(_ database: String = "kbtd", _ sql: String, user: String = "postgres") throws -> String {
        try Self.run("/usr/bin/psql", ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", directory.path, "-p", "\(port)",
                                       "-U", user, "-d", database, "-c", sql])
    }

    private func runServer(_ tool: String, _ arguments: [String], capture: Bool = true) throws {
        if let serverUser {
            try Self.run("/usr/sbin/runuser", ["-u", serverUser, "--", tool] + arguments, capture: capture)
        } else {
            try Self.run(tool, arguments, capture: capture)
        }
    }

    @discardableResult
    static func run(_ tool: String, _ arguments: [String], capture: Bool = true) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = capture ? out : FileHandle.nullDevice
        process.standardError = capture ? err : FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let stdout = capture ? out.fileHandleForReading.readDataToEndOfFile() : Data()
        let stderr = capture ? err.fileHandleForReading.readDataToEndOfFile() : Data()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw HTTPTestError(description: "\(tool) \(arguments.joined(separator: " ")) exited \(process.terminationStatus): "
                                + String(decoding: stderr, as: UTF8.self))
        }
        return String(decoding: stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A loopback port nothing listens on right now (the kernel's choice for port 0).
    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
