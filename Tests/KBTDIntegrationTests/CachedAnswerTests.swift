import Foundation
import HTTPTypes
import KBTDCore
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
@testable import KBTDServer
import Testing

/// The fast path for cached answers (`CachedAnswerHandler`): a plain
/// `GET /v1/height` or `/v1/heights` on an HTTP/1.1 connection is answered in
/// the channel pipeline; the same question with a `Connection` header goes
/// through the router. Both must send the same bytes.
@Suite("Cached answers on the fast path", .ownThreads, .timeLimit(.minutes(10)))
struct CachedAnswerTests {
    static let answered = HeightTests.chain.map { "/v1/height?" + $0.query } + [
        "/v1/height?model=iPhone17,1&language=en%2DUS&os=26.1",
        "/v1/height?model=iPhone17,1&language=ja-JP&orientation=landscape&keyboard_type=default",
        "/v1/heights?model=iPhone17,1",
        "/v1/heights?model=iPhone17,1&os=26.1",
        "/v1/heights?model=iPhone99,9&os=18.0",
    ]
    static let refused = [
        "/v1/height?model=iPhone17,1",
        "/v1/height?model=bad%20model&language=en-US",
        "/v1/height?model=iPhone17,1&language=en-US&orientation=sideways",
        "/v1/heights?model=iPhone17,1&os=twenty",
        "/v1/heights",
    ]

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

    /// Each question three ways: on a new connection (the bytes handler answers), on a connection
    /// whose bytes already go to the HTTP decoder (`CachedAnswerHandler` answers), and with a
    /// `Connection` header (the router answers). Status, headers and body must agree.
    @Test func theFastPathSendsWhatTheRouterSends() throws {
        let daemon = try TestDaemon().start()
        defer { #expect(daemon.stop() == 0) }
        try Self.loadChainFleet(into: daemon)
        let routed = try daemon.connection()
        let parts = try daemon.connection()
        #expect(try parts.request("GET", "/healthz").status == 200)
        var sent: [String: Int] = [:]
        func count(_ path: String, _ status: Int) {
            sent["\(path.split(separator: "?")[0])|\(status)", default: 0] += 1
        }
        func ask(_ path: String, _ headers: [(String, String)] = []) throws -> [HTTPTestResponse] {
            let bytes = try daemon.connection()
            let answers = [try bytes.request("GET", path, headers: headers), try parts.request("GET", path, headers: headers),
                           try routed.request("GET", path, headers: headers + [("Connection", "keep-alive")])]
            for answer in answers { count(path, answer.status) }
            for answer in answers.dropLast() {
                #expect(answer.status == answers[2].status, "\(path) \(headers)")
                #expect(answer.body == answers[2].body, "\(path): \(answer.text) against \(answers[2].text)")
                for name in ["content-type", "cache-control", "etag", "content-length", "connection", "transfer-encoding"] {
                    #expect(answer.header(name) == answers[2].header(name), "\(path) \(headers): \(name)")
                }
                #expect(answer.header("date") != nil)
                #expect(answer.headers.map { $0.0 } == answers[2].headers.map { $0.0 }, "\(path): header names and order")
            }
            return answers
        }
        var bases: Set<String> = []
        for path in Self.answered + Self.refused {
            let first = try ask(path)[0]
            if case .string(let basis)? = first.json?["basis"] { bases.insert(basis) }
            guard let etag = first.header("etag") else {
                #expect(Self.refused.contains(path), "\(path) answered \(first.status) without an ETag")
                continue
            }
            #expect(first.status == 200)
            for match in [etag, "\"0000000000000000\", \(etag)", "*"] {
                for answer in try ask(path, [("If-None-Match", match)]) {
                    #expect(answer.status == 304, "\(path) If-None-Match: \(match)")
                    #expect(answer.body.isEmpty)
                }
            }
            for answer in try ask(path, [("If-None-Match", "\"0000000000000000\"")]) {
                #expect(answer.status == 200)
                #expect(answer.body == first.body)
            }
        }
        #expect(bases.count >= 3, "the fleet should make several levels answer: \(bases)")
        // Every path counts in kbtd_http_requests_total alike.
        for (key, expected) in sent {
            let parts = key.split(separator: "|")
            let value = try daemon.metric("kbtd_http_requests_total{route=\"\(parts[0])\",status=\"\(parts[1])\"}")
            #expect(value == Double(expected), "\(key)")
        }
    }

    /// The bytes handler keeps answers rendered: a commit, a new `min_samples` or a new
    /// `cache_max_age` (SIGHUP) must show in the next answer on every path.
    @Test func renderedAnswersFollowTheDataAndTheSettings() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("kbtd.conf").path
        try "cache_max_age_seconds = 3600\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try TestDaemon(extraArguments: ["--config", config]).start()
        defer { #expect(daemon.stop() == 0) }
        let path = "/v1/height?model=iPhone17,1&language=en-US&os=26.1"
        func both() throws -> (fast: HTTPTestResponse, routed: HTTPTestResponse) {
            let fast = try daemon.connection().request("GET", path)
            let routed = try daemon.connection().request("GET", path, headers: [("Connection", "keep-alive")])
            #expect(fast.body == routed.body)
            #expect(fast.header("etag") == routed.header("etag"))
            #expect(fast.header("cache-control") == routed.header("cache-control"))
            return (fast, routed)
        }
        let empty = try both().fast
        #expect(empty.json?["basis"] == .string("default"))
        _ = try both()
        #expect(try daemon.post(gzip(batchBody(samples: shows(25, height: 336))), encoding: "gzip").status == 202)
        let loaded = try both().fast
        #expect(loaded.json?["basis"] == .string("model+os+language"), "\(loaded.text)")
        #expect(loaded.header("etag") != empty.header("etag"))
        let stale = try daemon.connection().request("GET", path, headers: [("If-None-Match", empty.header("etag") ?? "")])
        #expect(stale.status == 200)
        #expect(stale.body == loaded.body)

        // The max-age alone (the index and the estimator unchanged).
        try "cache_max_age_seconds = 60\n".write(toFile: config, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        #expect(daemon.waitForLog("configuration reloaded"))
        let reloaded = try both().fast
        #expect(reloaded.header("cache-control") == "public, max-age=60")
        #expect(reloaded.body == loaded.body)

        try "cache_max_age_seconds = 60\nmin_samples = 30\n".write(toFile: config, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        // The second reload's line: until it is logged the two paths may straddle the reload.
        #expect(daemon.waitForLog("configuration reloaded", occurrences: 2))
        let stricter = try both().fast
        #expect(stricter.json?["basis"] != .string("model+os+language"), "25 samples no longer make the level answer: \(stricter.text)")
    }

    /// The bytes handler holds a head it is still reading, so the header and idle deadlines must
    /// still close a slow or idle connection; and a connection it answers stays open while used.
    @Test func deadlinesHoldOnTheFastPath() throws {
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

    /// The router's side of a connection starts with the first request it must answer
    /// (`ListenerChannel.RouteOnFirstRequest`): routed requests between cached ones are answered on
    /// the same connection, and a client that ends its side after cached answers only is closed by
    /// kbtd at once, not left to `idle_timeout_seconds` (an hour here).
    @Test func theRoutersSideStartsWithTheFirstRequestItAnswers() throws {
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
        #expect(cachedOnly.isClosedByPeer(within: 30), "the client's half-closure must end a connection the router never served")

        // The same on a connection whose only request the router answered.
        let routedOnly = try daemon.connection()
        #expect(try routedOnly.request("GET", "/healthz").status == 200)
        shutdown(routedOnly.fd, Int32(SHUT_WR))
        #expect(routedOnly.isClosedByPeer(within: 30), "the client's half-closure must end a connection the router served")
    }

    /// Pipelined requests: one the router answers holds back the cached ones behind it, so
    /// every answer comes in the order asked.
    @Test(arguments: [
        // The router first: every cached question behind it waits its turn.
        ["GET /healthz", "GET /v1/height?model=iPhone17,1&language=en-US", "POST", "GET /v1/height?model=iPhone17,1",
         "GET /v1/heights?model=iPhone17,1", "GET /healthz", "GET /v1/height?model=iPhone17,1&language=ja-JP"],
        // Cached questions first (the bytes handler), then a batch and what follows go to the decoder.
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

    // MARK: The handler in a pipeline of its own

    static func handler(logLevel: Logger.Level = .info) throws -> (CachedAnswerHandler, ServerMetrics) {
        let metrics = ServerMetrics()
        var logger = Logger(label: "kbtd-test")
        logger.logLevel = logLevel
        let routes = HeightRoutes(heights: LiveHeights(index: HeightIndex(), settings: EstimatorSettings()),
                                  settings: SettingsBox(ServerSettings()), metrics: metrics)
        return (CachedAnswerHandler(CachedAnswers(routes: routes, dates: HTTPDate(), logger: logger)), metrics)
    }

    static func request(_ path: String, method: HTTPRequest.Method = .get, headers: HTTPFields = [:]) -> HTTPRequestPart {
        .head(HTTPRequest(method: method, scheme: nil, authority: "kbtd.test", path: path, headerFields: headers))
    }

    static let height = "/v1/height?model=iPhone17,1&language=en-US"

    /// What the channel wrote: the status of a complete answer, or nil when nothing was written.
    static func answer(from channel: EmbeddedChannel) throws -> (status: Int, headers: HTTPFields, body: String)? {
        guard case .head(let head)? = try channel.readOutbound(as: HTTPResponsePart.self) else { return nil }
        var body = ""
        while let part = try channel.readOutbound(as: HTTPResponsePart.self) {
            switch part {
            case .body(let buffer): body += String(buffer: buffer)
            case .end: return (head.status.code, head.headerFields, body)
            case .head: Issue.record("a second head before the end")
            }
        }
        Issue.record("no end after the head")
        return nil
    }

    /// Parts the handler passed on toward the router.
    static func passedOn(_ channel: EmbeddedChannel) throws -> [HTTPRequestPart] {
        var parts: [HTTPRequestPart] = []
        while let part = try channel.readInbound(as: HTTPRequestPart.self) { parts.append(part) }
        return parts
    }

    @Test func answersInThePipelineAndPassesTheRestOn() throws {
        let (handler, metrics) = try Self.handler()
        let channel = EmbeddedChannel(handler: handler)
        defer { _ = try? channel.finish() }

        try channel.writeInbound(Self.request(Self.height))
        try channel.writeInbound(HTTPRequestPart.end(nil))
        #expect(try Self.passedOn(channel).isEmpty, "a cached question must not reach the router")
        let answer = try #require(try Self.answer(from: channel))
        #expect(answer.status == 200)
        #expect(answer.body.contains("\"basis\":\"default\""))
        #expect(answer.headers[.contentLength] == String(answer.body.utf8.count))
        #expect(answer.headers[.contentType] == "application/json")
        #expect(answer.headers[.date] != nil)
        let etag = try #require(answer.headers[.eTag])

        try channel.writeInbound(Self.request(Self.height, headers: [.ifNoneMatch: etag]))
        try channel.writeInbound(HTTPRequestPart.end(nil))
        #expect(try Self.answer(from: channel)?.status == 304)

        let passed: [(String, HTTPRequest.Method, HTTPFields)] = [
            ("/healthz", .get, [:]),
            (Self.height, .head, [:]),
            (Self.height, .post, [:]),
            ("/v1/height?model=iPhone17,1", .get, [:]),
            ("/v1/heightz?model=iPhone17,1&language=en-US", .get, [:]),
            (Self.height, .get, [.connection: "close"]),
            (Self.height, .get, [.contentLength: "0"]),
        ]
        for (path, method, headers) in passed {
            try channel.writeInbound(Self.request(path, method: method, headers: headers))
            try channel.writeInbound(HTTPRequestPart.end(nil))
            let parts = try Self.passedOn(channel)
            #expect(parts.count == 2, "\(method) \(path) \(headers) should go to the router")
            #expect(try Self.answer(from: channel) == nil)
            // The router's answer goes out through the handler.
            try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .ok)))
            try channel.writeOutbound(HTTPResponsePart.end(nil))
            _ = try Self.answer(from: channel)
        }
        #expect(try metrics.registryText().contains("kbtd_http_requests_total{route=\"/v1/height\",status=\"200\"} 1"))
        #expect(try metrics.registryText().contains("kbtd_http_requests_total{route=\"/v1/height\",status=\"304\"} 1"))
    }

    @Test func waitsForTheRouterBeforeAnsweringAgain() throws {
        let (handler, _) = try Self.handler()
        let channel = EmbeddedChannel(handler: handler)
        defer { _ = try? channel.finish() }

        // The router has /healthz; while it has not answered, a cached question queues behind it.
        try channel.writeInbound(Self.request("/healthz"))
        try channel.writeInbound(HTTPRequestPart.end(nil))
        try channel.writeInbound(Self.request(Self.height))
        try channel.writeInbound(HTTPRequestPart.end(nil))
        #expect(try Self.passedOn(channel).count == 4)
        #expect(try Self.answer(from: channel) == nil)

        for _ in 0..<2 {
            try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .ok)))
            try channel.writeOutbound(HTTPResponsePart.end(nil))
            _ = try Self.answer(from: channel)
        }
        // Both answered: the next cached question is answered in place again.
        try channel.writeInbound(Self.request(Self.height))
        try channel.writeInbound(HTTPRequestPart.end(nil))
        #expect(try Self.passedOn(channel).isEmpty)
        #expect(try Self.answer(from: channel)?.status == 200)
    }

    @Test func theDebugLogSeesEveryRequest() throws {
        let (handler, _) = try Self.handler(logLevel: .debug)
        let channel = EmbeddedChannel(handler: handler)
        defer { _ = try? channel.finish() }
        try channel.writeInbound(Self.request(Self.height))
        try channel.writeInbound(HTTPRequestPart.end(nil))
        #expect(try Self.passedOn(channel).count == 2, "with the debug log on, the router (and its request log) answers")
    }
}

extension CachedAnswerTests {
    static func bytesHandler() -> (CachedAnswerBytesHandler, EmbeddedChannel) {
        var logger = Logger(label: "kbtd-test")
        logger.logLevel = .info
        let metrics = ServerMetrics()
        let routes = HeightRoutes(heights: LiveHeights(index: HeightIndex(), settings: EstimatorSettings()),
                                  settings: SettingsBox(ServerSettings()), metrics: metrics)
        let handler = CachedAnswerBytesHandler(CachedAnswers(routes: routes, dates: HTTPDate(), logger: logger))
        return (handler, EmbeddedChannel(handler: handler))
    }

    static func written(_ channel: EmbeddedChannel) throws -> String {
        var text = ""
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { text += String(buffer: buffer) }
        return text
    }

    static func passed(_ channel: EmbeddedChannel) throws -> String {
        var text = ""
        while let buffer = try channel.readInbound(as: ByteBuffer.self) { text += String(buffer: buffer) }
        return text
    }

    static let get = "GET \(height) HTTP/1.1\r\nHost: kbtd.test\r\nUser-Agent: Chat/3.2 CFNetwork\r\nAccept: */*\r\n\r\n"

    @Test func theBytesHandlerAnswersPlainGetsAsTheyArrive() throws {
        let (_, channel) = Self.bytesHandler()
        defer { _ = try? channel.finish() }
        // In three pieces: nothing is answered before the head is complete.
        let pieces = [String(Self.get.prefix(9)), String(Self.get.dropFirst(9).prefix(40)), String(Self.get.dropFirst(49))]
        for (index, piece) in pieces.enumerated() {
            try channel.writeInbound(ByteBuffer(string: piece))
            #expect(try Self.written(channel).isEmpty == (index < 2), "piece \(index)")
        }
        // Two pipelined in one read, the second revalidating.
        try channel.writeInbound(ByteBuffer(string: Self.get + Self.get.replacingOccurrences(
            of: "Accept: */*", with: "If-None-Match:  *  ")))
        let text = try Self.written(channel)
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nCache-Control: public, max-age=3600\r\nETag: \""))
        #expect(text.contains("\r\nContent-Length: "))
        #expect(text.contains("\"basis\":\"default\""))
        #expect(text.contains("HTTP/1.1 304 Not Modified\r\nCache-Control: public, max-age=3600\r\nETag: "))
        #expect(try Self.passed(channel).isEmpty)
    }

    @Test(arguments: [
        "get \(height) HTTP/1.1\r\n\r\n",
        "GET \(height) HTTP/1.0\r\n\r\n",
        "HEAD \(height) HTTP/1.1\r\n\r\n",
        "GET http://kbtd.test\(height) HTTP/1.1\r\n\r\n",
        "GET \(height) HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
        "GET \(height) HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n",
        "GET \(height) HTTP/1.1\r\nConnection: close\r\n\r\n",
        "GET \(height) HTTP/1.1\r\nUpgrade: h2c\r\n\r\n",
        "GET \(height) HTTP/1.1\r\nExpect: 100-continue\r\n\r\n",
        "GET \(height) HTTP/1.1\r\nIf-None-Match: *\r\nIf-None-Match: *\r\n\r\n",
        "GET \(height) HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n",
        "GET \(height) HTTP/1.1\r\nHost : a\r\n\r\n",
        "GET \(height) HTTP/1.1\r\nHost: caf\u{E9}\r\n\r\n",
        "GET \(height) HTTP/1.1\nHost: a\r\n\r\n",
        "GET \(height) HTTP/1.1\r\nHost: a\rb\r\n\r\n",
        "GET /v1/height?model=iPhone17,1 HTTP/1.1\r\n\r\n",
        "GET /v1/heightz?model=iPhone17,1&language=en-US HTTP/1.1\r\n\r\n",
        "GET \(height)  HTTP/1.1\r\n\r\n",
        "GET \(height) HTTP/1.1\r\nX-Padding: \(String(repeating: "a", count: 9000))\r\n\r\n",
    ])
    func theBytesHandlerPassesAnythingElseOnUnchanged(_ request: String) throws {
        let (handler, channel) = Self.bytesHandler()
        defer { _ = try? channel.finish() }
        // A cached question first (answered), then the doubtful request and one more cached question.
        try channel.writeInbound(ByteBuffer(string: Self.get))
        #expect(try Self.written(channel).hasPrefix("HTTP/1.1 200 OK"))
        try channel.writeInbound(ByteBuffer(string: request + Self.get))
        #expect(try Self.written(channel).isEmpty, "\(request.prefix(60).debugDescription) must not be answered here")
        #expect(try Self.passed(channel) == request + Self.get, "every byte goes on to the decoder, unchanged")
        #expect(handler.passing)
        try channel.writeInbound(ByteBuffer(string: Self.get))
        #expect(try Self.passed(channel) == Self.get, "and so does everything after")
    }

    /// A head framed by bare LFs never ends in CR LF CR LF: it must reach the decoder (which answers
    /// 400) as it arrives, not wait for the header deadline.
    @Test(arguments: ["GET \(height) HTTP/1.1\n\n", "GET \(height) HTTP/1.1\r\nHost: a\n\n",
                      "GET \(height) HTTP/1.1\r\n\n", "GET \(height) HTTP/1.1\r\nHost: a\r\n\r\r\n", "GET /v1/height\n"])
    func aBareLineFeedGoesToTheDecoderAtOnce(_ request: String) throws {
        let (handler, channel) = Self.bytesHandler()
        defer { _ = try? channel.finish() }
        try channel.writeInbound(ByteBuffer(string: request))
        #expect(try Self.written(channel).isEmpty)
        #expect(try Self.passed(channel) == request, "\(request.debugDescription) waits for nothing more")
        #expect(handler.passing)
    }

    @Test func aHalfClosedConnectionHandsItsPartialHeadToTheDecoder() throws {
        let (_, channel) = Self.bytesHandler()
        defer { _ = try? channel.finish() }
        try channel.writeInbound(ByteBuffer(string: "GET /v1/height?mo"))
        #expect(try Self.passed(channel).isEmpty)
        channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        #expect(try Self.passed(channel) == "GET /v1/height?mo")
    }
}

extension ServerMetrics {
    /// The registry in Prometheus' text format.
    func registryText() throws -> String {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }
}
