import Foundation
import HTTPTypes
import KBTDCore
import Logging
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
@testable import KBTDServer
import Testing

/// The thin path for cached answers (`CachedAnswerHandler`): a plain
/// `GET /v1/height` or `/v1/heights` on an HTTP/1.1 connection is answered in
/// the channel pipeline; the same question with a `Connection` header goes
/// through the router. Both must send the same bytes.
@Suite("Cached answers on the thin path")
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

    @Test func theThinPathSendsWhatTheRouterSends() throws {
        let daemon = try TestDaemon().start()
        defer { #expect(daemon.stop() == 0) }
        try Self.loadChainFleet(into: daemon)
        let connection = try daemon.connection()
        var sent: [String: Int] = [:]
        func count(_ path: String, _ status: Int) {
            sent["\(path.split(separator: "?")[0])|\(status)", default: 0] += 1
        }
        var bases: Set<String> = []
        for path in Self.answered + Self.refused {
            let thin = try connection.request("GET", path)
            let routed = try connection.request("GET", path, headers: [("Connection", "keep-alive")])
            count(path, thin.status)
            count(path, routed.status)
            #expect(thin.status == routed.status, "\(path)")
            #expect(thin.body == routed.body, "\(path): \(thin.text) against \(routed.text)")
            for name in ["content-type", "cache-control", "etag", "content-length", "connection", "transfer-encoding"] {
                #expect(thin.header(name) == routed.header(name), "\(path): \(name)")
            }
            #expect(thin.header("date") != nil)
            if case .string(let basis)? = thin.json?["basis"] { bases.insert(basis) }
            guard let etag = thin.header("etag") else {
                #expect(Self.refused.contains(path), "\(path) answered \(thin.status) without an ETag")
                continue
            }
            #expect(thin.status == 200)
            for match in [etag, "\"0000000000000000\", \(etag)", "*"] {
                let thin304 = try connection.request("GET", path, headers: [("If-None-Match", match)])
                let routed304 = try connection.request("GET", path, headers: [("If-None-Match", match), ("Connection", "keep-alive")])
                count(path, thin304.status)
                count(path, routed304.status)
                #expect(thin304.status == 304, "\(path) If-None-Match: \(match)")
                #expect(routed304.status == 304)
                #expect(thin304.body.isEmpty)
                for name in ["content-type", "cache-control", "etag", "content-length"] {
                    #expect(thin304.header(name) == routed304.header(name), "\(path) 304: \(name)")
                }
            }
            let stale = try connection.request("GET", path, headers: [("If-None-Match", "\"0000000000000000\"")])
            count(path, stale.status)
            #expect(stale.status == 200)
            #expect(stale.body == thin.body)
        }
        #expect(bases.count >= 3, "the fleet should make several levels answer: \(bases)")
        // Both paths count in kbtd_http_requests_total alike.
        for (key, expected) in sent {
            let parts = key.split(separator: "|")
            let value = try daemon.metric("kbtd_http_requests_total{route=\"\(parts[0])\",status=\"\(parts[1])\"}")
            #expect(value == Double(expected), "\(key)")
        }
    }

    /// Pipelined requests: one the router answers holds back the cached ones behind it, so
    /// every answer comes in the order asked.
    @Test func pipelinedRequestsAreAnsweredInOrder() throws {
        let daemon = try TestDaemon().start()
        defer { #expect(daemon.stop() == 0) }
        let batch = batchBody(samples: shows(3, height: 336))
        let requests: [(head: String, body: [UInt8], status: Int, key: String?)] = [
            ("GET /healthz", [], 200, "queue_depth"),
            ("GET /v1/height?model=iPhone17,1&language=en-US", [], 200, "height"),
            ("POST /v1/batches", batch, 202, "accepted"),
            ("GET /v1/height?model=iPhone17,1", [], 400, "error"),
            ("GET /v1/heights?model=iPhone17,1", [], 200, "estimates"),
            ("GET /healthz", [], 200, "queue_depth"),
            ("GET /v1/height?model=iPhone17,1&language=ja-JP", [], 200, "height"),
        ]
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
        return (CachedAnswerHandler(routes: routes, dates: HTTPDate(), logger: logger), metrics)
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

extension ServerMetrics {
    /// The registry in Prometheus' text format.
    func registryText() throws -> String {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }
}
