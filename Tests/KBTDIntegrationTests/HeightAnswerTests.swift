import Foundation
import KBTDCore
import Testing

/// Height answers over HTTP/1.1 against the live daemon: kept rendered, under the connection's
/// deadlines, pipelined in order.
@Suite("Height answers over HTTP/1.1", .ownThreads, .timeLimit(.minutes(10)))
struct HeightAnswerTests {
    static let height = "/v1/height?model=iPhone17,1&language=en-US"

    static func loadChainFleet(into daemon: TestDaemon) throws {
        let batches: [(model: String, os: String, samples: [TestSample])] = [
            ("iPhone17,1", "26.1", shows(25, height: 336)),
            ("iPhone17,1", "18.6.2", shows(30, height: 330)),
            ("iPhone17,1", "26.1", shows(5, height: 350, language: "fr-FR")),
            ("iPhone15,2", "26.0", shows(40, height: 336) + shows(40, height: 344, language: "ja-JP")),
        ]
        for batch in batches {
            let response = try daemon.post(gzip(batchBody(model: batch.model, os: batch.os, samples: batch.samples)), encoding: "gzip")
            #expect(response.status == 202, "\(response.text)")
        }
    }

    /// Answers are kept rendered: a commit, a new `min_samples` or a new `cache_max_age` (SIGHUP)
    /// must show in the next answer, and a revalidation with an old `ETag` gets the new body.
    @Test func renderedAnswersFollowTheDataAndTheSettings() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("kbtd.conf").path
        try "cache_max_age_seconds = 3600\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try TestDaemon(extraArguments: ["--config", config]).start()
        defer { #expect(daemon.stop() == 0) }
        let path = "/v1/height?model=iPhone17,1&language=en-US&os=26.1"
        func ask() throws -> HTTPTestResponse { try daemon.connection().request("GET", path) }
        let empty = try ask()
        #expect(empty.json?["basis"] == .string("default"))
        #expect(try ask().header("etag") == empty.header("etag"), "the same data, the same answer")
        #expect(try daemon.post(gzip(batchBody(samples: shows(25, height: 336))), encoding: "gzip").status == 202)
        let loaded = try ask()
        #expect(loaded.json?["basis"] == .string("model+os+language"), "\(loaded.text)")
        #expect(loaded.header("etag") != empty.header("etag"))
        let stale = try daemon.connection().request("GET", path, headers: [("If-None-Match", empty.header("etag") ?? "")])
        #expect(stale.status == 200)
        #expect(stale.body == loaded.body)

        // The max-age alone (the index and the estimator unchanged).
        try "cache_max_age_seconds = 60\n".write(toFile: config, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        #expect(daemon.waitForLog("configuration reloaded"))
        let reloaded = try ask()
        #expect(reloaded.header("cache-control") == "public, max-age=60")
        #expect(reloaded.body == loaded.body)

        try "cache_max_age_seconds = 60\nmin_samples = 30\n".write(toFile: config, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        // The second reload's line: until it is logged an answer may come from before it.
        #expect(daemon.waitForLog("configuration reloaded", occurrences: 2))
        let stricter = try ask()
        #expect(stricter.json?["basis"] != .string("model+os+language"), "25 samples no longer make the level answer: \(stricter.text)")
    }

    /// The header and idle deadlines close a slow or idle connection; a connection asking for
    /// heights stays open while used.
    @Test func deadlinesHoldForHeightQuestions() throws {
        let daemon = try TestDaemon(environment: ["KBTD_HEADER_TIMEOUT_SECONDS": "1", "KBTD_IDLE_TIMEOUT_SECONDS": "2"]).start()
        defer { #expect(daemon.stop() == 0) }
        let slow = try daemon.connection()
        let head = Array("GET /v1/height?model=iPhone17,1&language=en-US HTTP/1.1\r\nHost: kbtd.test\r\n".utf8)
        // A byte, then up to 100 ms watching for the close (the trickle's rate), until the daemon cuts it off.
        let trickle = Deadline(60, for: "the daemon to cut off a trickled head")
        var closed = false, sent = 0
        while !closed, !trickle.hasPassed, sent < head.count - 1 {
            try? slow.send([head[sent]])
            sent += 1
            closed = slow.isClosedByPeer(until: trickle, cap: 100)
        }
        if !closed { closed = slow.isClosedByPeer(until: trickle) }
        #expect(closed, "a head trickled past header_timeout_seconds must be cut off (\(sent) bytes sent)")

        // Nine requests 0.4 s apart span more than idle_timeout_seconds (2 s): each is answered
        // on the same connection (a count, not a clock: a slow machine only stretches the span).
        let busy = try daemon.connection()
        for _ in 0..<9 {
            #expect(try busy.request("GET", Self.height).status == 200)
            // The gap between requests is spent watching the connection: it must not close.
            #expect(!busy.isClosedByPeer(until: Deadline(0.4, for: "the gap between requests"), cap: 400))
        }
        #expect(busy.isClosedByPeer(within: 60), "idle_timeout_seconds must close it once it stops asking")
    }

    /// Height questions and other requests share a connection, and a client that ends its side
    /// is closed by kbtd at once, not left to `idle_timeout_seconds` (an hour here).
    @Test func aHalfClosedConnectionIsClosedAtOnce() throws {
        let daemon = try TestDaemon(environment: ["KBTD_IDLE_TIMEOUT_SECONDS": "3600"]).start()
        defer { #expect(daemon.stop() == 0) }
        try Self.loadChainFleet(into: daemon)
        let mixed = try daemon.connection()
        for _ in 0..<3 { #expect(try mixed.request("GET", Self.height).status == 200) }
        #expect(try mixed.request("GET", "/healthz").status == 200)
        #expect(try mixed.request("GET", Self.height).status == 200)
        #expect(try mixed.request("GET", "/v1/heights?model=iPhone17,1", headers: [("Connection", "keep-alive")]).status == 200)

        let cachedOnly = try daemon.connection()
        for _ in 0..<3 { #expect(try cachedOnly.request("GET", Self.height).status == 200) }
        shutdown(cachedOnly.fd, Int32(SHUT_WR))
        #expect(cachedOnly.isClosedByPeer(within: 30), "the client's half-closure must end the connection")
    }

    /// `HTTP1FastAnswerHandler` answers as the router does: the same bytes sent to a daemon that
    /// answers cached heights before the router and to one whose debug log sends every request
    /// through the router get the same statuses, headers (but `Date`) and bodies, and the same
    /// connection ends; only the first counts fast answers.
    @Test func cachedHeightsAnswerAsTheRouterDoes() throws {
        let fast = try TestDaemon().start()
        defer { #expect(fast.stop() == 0) }
        let routed = try TestDaemon(extraArguments: ["--log-level", "debug"]).start()
        defer { #expect(routed.stop() == 0) }
        try Self.loadChainFleet(into: fast)
        try Self.loadChainFleet(into: routed)
        let etag = try #require(try fast.get(Self.height).header("etag"))
        #expect(try routed.get(Self.height).header("etag") == etag)
        func get(_ target: String = Self.height, _ fields: String = "") -> String {
            "GET \(target) HTTP/1.1\r\nHost: kbtd.test\r\n\(fields)\r\n"
        }
        // The bytes sent on a new connection, the answers to read (true: to a HEAD), and whether the
        // daemon then closes the connection (else it must answer one more question on it).
        let cases: [(bytes: String, answers: [Bool], closes: Bool)] = [
            (get(), [false], false),
            (get("/v1/heights?model=iPhone17,1"), [false], false),
            (get(Self.height, "If-None-Match: \(etag)\r\n"), [false], false),
            (get(Self.height, "If-None-Match: \"x\"\r\nIf-None-Match: \(etag)\r\n"), [false], false),
            ("HEAD \(Self.height) HTTP/1.1\r\nHost: kbtd.test\r\n\r\n", [true], false),
            (get(Self.height, "Content-Length: 0\r\n"), [false], false),
            (get(Self.height, "Content-Length: 2\r\n") + "{}", [false], false),
            (get(Self.height, "Transfer-Encoding: chunked\r\n") + "2\r\n{}\r\n0\r\n\r\n", [false], false),
            (get(Self.height, "Expect: 100-continue\r\n"), [false], false),
            (get("/v1/height?model="), [false], false),
            (get("/v1/height/?model=iPhone17,1&language=en-US"), [false], false),
            (get(Self.height, "Connection: keep-alive\r\n"), [false], false),
            (get(Self.height, "Connection: close\r\n"), [false], true),
            // Left to the router: HTTP/1.0, and a target in absolute form (the fast path reads NIO's
            // parsed request, before the conversion to HTTP types makes it a path).
            // HTTP/1.0 without keep-alive: one request a connection, closed after its answer (what follows is not read).
            ("GET \(Self.height) HTTP/1.0\r\nHost: kbtd.test\r\n\r\n", [false], true),
            ("GET /nope HTTP/1.0\r\n\r\n" + get(), [false], true),
            ("GET \(Self.height) HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", [false], false),
            (get("http://kbtd.test\(Self.height)"), [false], false),
            (get("/nope") + get() + get("/v1/heights?model=iPhone17,1") + get("/v1/height?model=") + get()
                + get(Self.height, "If-None-Match: \(etag)\r\n"), Array(repeating: false, count: 6), false),
            (get() + get(Self.height, "Connection: close\r\n") + get(), [false, false], true),
            // A HEAD's answer stays bodiless after answers sent without the router (NIO's encoder frames
            // each answer by the method of the request it answers, in order).
            (get() + get() + "HEAD \(Self.height) HTTP/1.1\r\nHost: kbtd.test\r\n\r\n", [false, false, true], false),
        ]
        for (bytes, answers, closes) in cases {
            var seen: [[String]] = []
            for daemon in [fast, routed] {
                let connection = try daemon.connection()
                try connection.send(Array(bytes.utf8))
                var lines: [String] = []
                for bodiless in answers {
                    let response = try connection.readResponse(bodiless: bodiless)
                    lines += ["\(response.status)", response.text]
                        + response.headers.filter { $0.0.lowercased() != "date" }.map { "\($0.0.lowercased()): \($0.1)" }
                }
                if closes {
                    #expect(connection.isClosedByPeer(within: 30), "\(bytes)")
                } else {
                    #expect(try connection.request("GET", Self.height).status == 200, "\(bytes)")
                }
                seen.append(lines)
            }
            #expect(seen[0] == seen[1], "\(bytes)")
        }
        #expect(try fast.metric("kbtd_fast_answers_total{protocol=\"http/1.1\"}") ?? 0 > 0)
        #expect(try routed.metric("kbtd_fast_answers_total{protocol=\"http/1.1\"}") ?? 0 == 0, "the debug log: the router alone")
        let counted = "kbtd_http_requests_total{route=\"/v1/height\",status=\"200\"}"
        #expect(try fast.metric(counted) == routed.metric(counted), "each answer counted once, as the router counts it")
    }

    /// Pipelined requests are answered in the order asked.
    @Test(arguments: [
        // Another route first: every height question behind it waits its turn.
        ["GET /healthz", "GET /v1/height?model=iPhone17,1&language=en-US", "POST", "GET /v1/height?model=iPhone17,1",
         "GET /v1/heights?model=iPhone17,1", "GET /healthz", "GET /v1/height?model=iPhone17,1&language=ja-JP"],
        // Height questions first, then a batch and what follows.
        ["GET /v1/height?model=iPhone17,1&language=en-US", "GET /v1/heights?model=iPhone17,1", "POST",
         "GET /v1/height?model=iPhone17,1&language=ja-JP", "GET /v1/height?model=iPhone17,1", "GET /healthz"],
    ])
    func pipelinedRequestsAreAnsweredInOrder(_ sequence: [String]) throws {
        let daemon = try TestDaemon().start()
        defer { #expect(daemon.stop() == 0) }
        let batch = batchBody(samples: shows(3, height: 336))
        let requests: [(head: String, body: [UInt8], status: Int, key: String?)] = sequence.map { line in
            if line == "POST" { return ("POST /v1/batches", batch, 202, "accepted") }
            if line.hasSuffix("/healthz") { return (line, [], 200, "queue_depth") }
            if line.contains("heights") { return (line, [], 200, "estimates") }
            return line.contains("language") ? (line, [], 200, "height") : (line, [], 400, "error")
        }
        var bytes: [UInt8] = []
        for request in requests {
            var head = "\(request.head) HTTP/1.1\r\nHost: kbtd.test\r\n"
            if !request.body.isEmpty { head += "Content-Type: application/json\r\nContent-Length: \(request.body.count)\r\n" }
            bytes += Array((head + "\r\n").utf8) + request.body
        }
        let connection = try daemon.connection()
        try connection.send(bytes)
        for request in requests {
            let response = try connection.readResponse()
            #expect(response.status == request.status, "\(request.head): \(response.text)")
            if let key = request.key { #expect(response.json?[key] != nil, "\(request.head): \(response.text)") }
        }
    }
}
