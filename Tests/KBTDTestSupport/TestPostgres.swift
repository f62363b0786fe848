import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PostgreSQL cluster for one test: `initdb` into a temporary
/// directory, `pg_ctl start` on a loopback port from `ToolPorts` with its socket in that
/// directory, stopped (immediate) and removed by `deinit`. As root the server
/// runs as the unprivileged `postgres` user, as Debian's own tools do.
///
/// `TestPostgres.binaries` is nil where PostgreSQL is not installed; the
/// PostgreSQL tests are then disabled (CI installs it: `scripts/dev deps`).
// Unchecked: start/stop/restart run on the test's own thread; workers only read `url`.
package final class TestPostgres: @unchecked Sendable {
    /// The directory holding `initdb` and `pg_ctl` (Debian: /usr/lib/postgresql/N/bin), or nil.
    package static let binaries: String? = {
        if let override = ProcessInfo.processInfo.environment["KBTD_TEST_PG_BIN"] { return override }
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted()
        for version in versions.reversed() where FileManager.default.isExecutableFile(atPath: "\(root)/\(version)/bin/pg_ctl") {
            return "\(root)/\(version)/bin"
        }
        return nil
    }()

    package static var available: Bool { binaries != nil }

    package let directory: URL
    package let dataDirectory: String
    package private(set) var port = 0
    /// Runs server commands as this user (nil: as ourselves, when not root).
    private let serverUser: String?

    /// A `postgres://` URL of the `kbtd` database over TCP (no password: trust authentication).
    package var url: String { "postgres://kbtd@127.0.0.1:\(port)/kbtd" }
    /// The same database through the Unix socket directory (`host=` query parameter).
    package var socketURL: String { "postgres://kbtd@localhost/kbtd?host=\(directory.path)&port=\(port)" }

    package init() throws {
        guard let bin = Self.binaries else { throw HTTPTestError(description: "PostgreSQL is not installed") }
        directory = TestPaths.temporaryDirectory()
        dataDirectory = directory.appendingPathComponent("data").path
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
            unix_socket_directories = '\(directory.path)'
            max_connections = 60
            shared_buffers = 32MB
            logging_collector = off
            """
        try append(conf)
        // The server binds the port itself: ToolPorts retries the start when it was taken meanwhile.
        port = try ToolPorts.start(1, "PostgreSQL") { ports in
            try append("\nport = \(ports[0])\n")  // the last `port` line wins
            try start()
            return ports[0]
        }
        try psql("postgres", "CREATE ROLE kbtd LOGIN")
        try psql("postgres", "CREATE DATABASE kbtd OWNER kbtd")
    }

    private func append(_ text: String) throws {
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: dataDirectory + "/postgresql.conf"))
        handle.seekToEndOfFile()
        handle.write(Data(text.utf8))
        try handle.close()
    }

    deinit {
        if let bin = Self.binaries {
            try? runServer("\(bin)/pg_ctl", ["-D", dataDirectory, "-m", "immediate", "-w", "stop"])
        }
        try? FileManager.default.removeItem(at: directory)
    }

    package func start() throws {
        // Not through Foundation's Process: the daemonized server would inherit the descriptor
        // Process watches for the child's end (and its stdout/stderr pipes), and the wait would never end.
        let tool = "\(Self.binaries!)/pg_ctl"
        let arguments = ["-D", dataDirectory, "-l", directory.path + "/server.log", "-w", "-t", "60", "start"]
        let status = serverUser.map { Self.spawnAndWait("/usr/sbin/runuser", ["-u", $0, "--", tool] + arguments) }
            ?? Self.spawnAndWait(tool, arguments)
        guard status == 0 else {
            let log = (try? String(contentsOfFile: directory.path + "/server.log", encoding: .utf8)) ?? ""
            if ToolPorts.saysAddressInUse(log) { throw PortTaken(description: log) }
            throw HTTPTestError(description: "pg_ctl start exited \(status):\n\(log)")
        }
    }

    /// posix_spawn with stdin, stdout and stderr on /dev/null; waits and returns the exit status.
    package static func spawnAndWait(_ tool: String, _ arguments: [String]) -> Int32 {
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
    package func stop(mode: String = "fast") throws {
        try runServer("\(Self.binaries!)/pg_ctl", ["-D", dataDirectory, "-m", mode, "-w", "-t", "60", "stop"])
    }

    /// Runs SQL through `psql` on the Unix socket; returns its unaligned output.
    @discardableResult
    package func psql(_ database: String = "kbtd", _ sql: String, user: String = "postgres") throws -> String {
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
    package static func run(_ tool: String, _ arguments: [String], capture: Bool = true) throws -> String {
        let result = try runToEnd(tool, arguments, timeout: 120)
        guard result.status == 0 else {
            throw HTTPTestError(description: "\(tool) \(arguments.joined(separator: " ")) exited \(result.status): " + result.stderr)
        }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
