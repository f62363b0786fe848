import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import KBTDCore
import KBTDServer
import KBTDStore
import Logging
import NIOCore
import Synchronization

/// The real `KBTDApp` (real SQLite file in a temporary directory, real
/// writer thread, the same router and middlewares the daemon serves) answering
/// requests in-process: no process to spawn, no socket. Routes are tested
/// here; what needs a process (signals, sockets, kill -9, systemd, exit codes)
/// stays on `TestDaemon`.
///
/// Settings come from the same loader as `kbtd serve`, with `environment` as
/// the `KBTD_*` variables. Requests come from 127.0.0.1 unless `from:` names
/// another client address (`"unix"` is the Unix socket).
package final class InProcessApp: Sendable {
    package let directory: URL
    package let database: String
    package let app: KBTDApp
    package let logger: Logger

    /// An app on `database` after the app before it shut down. `shutdown()` closes the old app's
    /// lock descriptor at once, but a child process another test spawns at that moment holds a copy
    /// of every descriptor until it execs (`O_CLOEXEC` closes it only then), and the `flock` lasts as
    /// long as any copy: while opening finds the lock held (`AlreadyLocked`, no other error), it is
    /// asked again until a bounded deadline.
    package static func reopened(environment: [String: String] = [:], database: String) async throws -> InProcessApp {
        var opened: InProcessApp?
        try await waitUntil("the database lock of the app that shut down (\(database))") {
            do {
                opened = try InProcessApp(environment: environment, database: database)
                return true
            } catch is AlreadyLocked {
                return false
            }
        }
        return opened!
    }

    /// - Parameter uptime: the rate limiter's clock (nil: the system's uptime).
    package init(environment: [String: String] = [:], database: String? = nil, uptime: (@Sendable () -> Double)? = nil) throws {
        directory = TestPaths.temporaryDirectory()
        self.database = database ?? directory.appendingPathComponent("kbtd.sqlite").path
        let settings = try SettingsLoader.load(configFile: nil, environment: environment,
                                               flags: ["database": self.database, "listen": "127.0.0.1:0"])
        var logger = Logger(label: "kbtd-test")
        logger.logLevel = .critical
        self.logger = logger
        app = try uptime.map { try KBTDApp(settings: settings, logger: logger, uptime: $0) }
            ?? KBTDApp(settings: settings, logger: logger)
    }

    /// Stops the writer (committing what is queued), then removes the directory.
    deinit {
        let app = self.app, directory = self.directory
        Task.detached {
            await app.shutdown()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// One request, answered by the app; the response as a socket would carry it
    /// (Content-Length from the body, which a HEAD answer does not carry).
    package func request(_ method: HTTPRequest.Method, _ path: String, headers: [(String, String)] = [], body: [UInt8] = [],
                 from source: String = "127.0.0.1") async throws -> HTTPTestResponse {
        var fields = HTTPFields()
        let setsLength = headers.contains { $0.0.lowercased() == "content-length" }
        if !setsLength && (method == .post || !body.isEmpty) { fields[.contentLength] = String(body.count) }
        for (name, value) in headers {
            guard let name = HTTPField.Name(name) else { throw HTTPTestError(description: "bad header name \(name)") }
            fields.append(HTTPField(name: name, value: value))
        }
        let request = Request(head: HTTPRequest(method: method, scheme: "http", authority: "kbtd.test", path: path, headerFields: fields),
                              body: RequestBody(buffer: ByteBuffer(bytes: body)))
        // Resolved, not `init(ipAddress:)`: that one leaves `host` empty, and an
        // accepted connection's peer address carries it (the local-peer rule reads it).
        let address = source == "unix" ? try SocketAddress(unixDomainSocketPath: directory.appendingPathComponent("kbtd.sock").path)
            : try SocketAddress.makeAddressResolvingHost(source, port: 40_000)
        let context = KBTDRequestContext(source: KBTDRequestSource(logger: logger, remoteAddress: address))
        let response = await app.respond(to: request, context: context)
        let collector = BodyCollector()
        try await response.body.write(collector)
        let bytes = collector.bytes
        var headerList = response.headers.map { ($0.name.rawName, $0.value) }
        if response.headers[.contentLength] == nil, response.status != .notModified, response.status != .noContent {
            headerList.append(("Content-Length", String(response.body.contentLength ?? bytes.count)))
        }
        return HTTPTestResponse(status: Int(response.status.code), headers: headerList, body: method == .head ? [] : bytes)
    }

    /// The same, with the method by name (`"DELETE"`).
    package func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = [],
                 from source: String = "127.0.0.1") async throws -> HTTPTestResponse {
        guard let parsed = HTTPRequest.Method(method) else { throw HTTPTestError(description: "bad method \(method)") }
        return try await request(parsed, path, headers: headers, body: body, from: source)
    }

    package func get(_ path: String, headers: [(String, String)] = [], from source: String = "127.0.0.1") async throws -> HTTPTestResponse {
        try await request(.get, path, headers: headers, from: source)
    }

    /// POSTs a batch body with the given encoding headers.
    package func post(_ body: [UInt8], encoding: String? = nil, contentType: String? = "application/json",
              headers: [(String, String)] = [], from source: String = "127.0.0.1") async throws -> HTTPTestResponse {
        var all = headers
        if let contentType { all.append(("Content-Type", contentType)) }
        if let encoding { all.append(("Content-Encoding", encoding)) }
        return try await request(.post, "/v1/batches", headers: all, body: body, from: source)
    }

    /// One series' value from `/metrics` (the first line starting with `series`).
    package func metric(_ series: String) async throws -> Double? {
        let text = try await get("/metrics").text
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(series + " ") }) else { return nil }
        return Double(line.split(separator: " ").last ?? "")
    }

    /// `kbtd stats --format json` against this app's database, parsed.
    package func stats(_ extra: [String] = []) throws -> JSONValue {
        let result = try runKBTD(["stats", "--database", database, "--format", "json"] + extra)
        guard result.status == 0 else { throw HTTPTestError(description: "kbtd stats failed: \(result.stderr)") }
        return try JSONParser.parse(Array(result.stdout.utf8))
    }

    /// `kbtd export --output FILE` against this app's database: the written table, parsed.
    package func export(to file: URL) throws -> JSONValue {
        let result = try runKBTD(["export", "--database", database, "--output", file.path])
        guard result.status == 0 else { throw HTTPTestError(description: "kbtd export failed: \(result.stderr)") }
        return try JSONParser.parse(Array(try Data(contentsOf: file)))
    }
}

/// Collects a response body in memory.
private final class BodyCollector: ResponseBodyWriter, Sendable {
    private let buffer = Mutex<[UInt8]>([])

    var bytes: [UInt8] { buffer.withLock { $0 } }

    func write(_ chunk: ByteBuffer) async throws {
        buffer.withLock { $0.append(contentsOf: chunk.readableBytesView) }
    }

    func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
