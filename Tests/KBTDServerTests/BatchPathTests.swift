import Foundation
import HTTPTypes
import KBTDCompression
import KBTDCore
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Synchronization
@testable import KBTDServer
import Testing

/// The batch path (`BatchIngestHandler`) against the router: two apps with the same settings get
/// the same requests in the same order, one through the router (`InProcessApp.request`), the other
/// through the handlers every listener stacks after NIO's decoder (`KBTDApp.requestHandlers`). Every
/// status the route can give must come back with the same status, header fields (but `Date`) and
/// body, and the same counts.
@Suite("The batch path answers as the router does", .timeLimit(.minutes(2)))
struct BatchPathTests {
    static let client = "127.0.0.1"
    static let environment = [
        "KBTD_INGEST_TOKENS": "secret", "KBTD_RATE_LIMIT_LOCAL_PEERS": "true",
        "KBTD_RATE_LIMIT_PER_SECOND": "0.001", "KBTD_RATE_LIMIT_BURST": "20",
        "KBTD_MAX_COMPRESSED_BYTES": "4096", "KBTD_MAX_DECOMPRESSED_BYTES": "65536",
    ]

    /// One request: its header fields and its body in the chunks it arrives in.
    struct Sent: CustomStringConvertible {
        var name: String
        var headers: [(String, String)]
        var chunks: [[UInt8]]
        var description: String { name }
    }

    /// A connection's request handlers on an in-memory channel whose peer is `client`; with a `log`,
    /// what the handlers ask of the channel (`PipelineLog.Outbound`) is logged, and with `passedOn`
    /// also what they pass on to the router's side (`PipelineLog.Inbound`).
    static func connection(_ app: KBTDApp, _ fast: FastAnswerProtocol = .http1, log: PipelineLog? = nil,
                           passedOn: Bool = false) async throws -> NIOAsyncTestingChannel {
        let channel = NIOAsyncTestingChannel()
        try await channel.eventLoop.submit {
            let batches = BatchPath(app: app, clients: ClientAddressResolver(app.settings.current))
            let pipeline = channel.pipeline.syncOperations
            if let log { try pipeline.addHandler(PipelineLog.Outbound(log)) }
            try pipeline.addHandlers(app.requestHandlers(fast, limits: app.settings.current.limits, batches: batches))
            if let log, passedOn { try pipeline.addHandler(PipelineLog.Inbound(log)) }
        }.get()
        try await channel.connect(to: SocketAddress.makeAddressResolvingHost(client, port: 40_000)).get()
        return channel
    }

    /// Sends `sent` on `channel` and reads one whole answer.
    static func exchange(_ sent: Sent, on channel: NIOAsyncTestingChannel) async throws -> HTTPTestResponse {
        var fields = HTTPFields()
        for (name, value) in sent.headers { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        try await channel.writeInbound(HTTPRequestPart.head(HTTPRequest(method: .post, scheme: "http", authority: "kbtd.test",
                                                                        path: "/v1/batches", headerFields: fields)))
        for chunk in sent.chunks { try await channel.writeInbound(HTTPRequestPart.body(ByteBuffer(bytes: chunk))) }
        try await channel.writeInbound(HTTPRequestPart.end(nil))
        return try await answer(on: channel)
    }

    static func answer(on channel: NIOAsyncTestingChannel) async throws -> HTTPTestResponse {
        // The batch's task starts on the channel's event loop, as one of its tasks: this loop runs
        // those only when told to (a real loop runs them in the turn they were queued in).
        await channel.testingEventLoop.run()
        guard case .head(let head) = try await channel.waitForOutboundWrite(as: HTTPResponsePart.self) else {
            throw HTTPTestError(description: "no response head")
        }
        var body: [UInt8] = []
        while true {
            switch try await channel.waitForOutboundWrite(as: HTTPResponsePart.self) {
            case .body(let chunk): body += chunk.readableBytesView
            case .end: return HTTPTestResponse(status: Int(head.status.code),
                                               headers: head.headerFields.map { ($0.name.rawName, $0.value) }, body: body)
            case .head: throw HTTPTestError(description: "a second head")
            }
        }
    }

    /// Header fields without `Date`, names lower-cased, in order.
    static func fields(_ headers: [(String, String)]) -> [String] {
        headers.filter { $0.0.lowercased() != "date" }.map { "\($0.0.lowercased()): \($0.1)" }
    }

    /// The requests, in order: each status the route gives but 429 and 503 (which follow).
    static func requests() -> [Sent] {
        let auth = ("Authorization", "Bearer secret")
        let json = ("Content-Type", "application/json")
        let gzipped = ("Content-Encoding", "gzip")
        let valid = gzip(batchBody(samples: shows(25, height: 336)))
        func post(_ name: String, _ body: [UInt8], _ headers: [(String, String)], chunked: Int = 700) -> Sent {
            var all = headers
            if !all.contains(where: { $0.0 == "Content-Length" }) { all.append(("Content-Length", String(body.count))) }
            let chunks = stride(from: 0, to: body.count, by: chunked).map { Array(body[$0..<min($0 + chunked, body.count)]) }
            return Sent(name: name, headers: all, chunks: chunks)
        }
        let partial = batchBody(rawSamples: shows(3, height: 336).map(\.json) + [
            .object([("kind", .string("show")), ("height", .string("tall"))]),
        ])
        // Deflates to little: over the decompressed cap, not the wire cap.
        let bomb = gzip(Array("{\"batch_id\": \"bomb\", \"pad\": \"\(String(repeating: " ", count: 70_000))\"}".utf8))
        return [
            post("202 stored", valid, [auth, json, gzipped]),
            post("200 duplicate", valid, [auth, json, gzipped]),
            post("202 with rejected samples", partial, [auth, json]),
            post("400 invalid JSON", Array("{\"batch_id\": ".utf8), [auth, json]),
            post("400 invalid batch", Array("{\"samples\": []}".utf8), [auth, json]),
            post("400 bad compressed stream", Array("not gzip at all".utf8), [auth, json, gzipped]),
            post("415 content type", Array("{}".utf8), [auth, ("Content-Type", "text/plain")]),
            post("415 content encoding", Array("{}".utf8), [auth, json, ("Content-Encoding", "br")]),
            post("413 declared length", Array(repeating: 32, count: 5000), [auth, json]),
            post("413 on the wire", Array(repeating: 32, count: 5000), [auth, json, ("Content-Length", "100")]),
            post("413 decompressed", bomb, [auth, json, gzipped]),
            post("401 no token", valid, [json, gzipped]),
            post("401 wrong token", valid, [("Authorization", "Bearer guess"), json, gzipped]),
            post("202 deflate", Deflater.compress(batchBody(samples: shows(5, height: 340)), format: .zlib),
                 [auth, json, ("Content-Encoding", "deflate")]),
        ]
    }

    @Test func everyStatusOfTheRouteIsTheRoutersBytes() async throws {
        // One stopped clock for both apps' rate limiters: their buckets hold the same tokens at each
        // refusal, so `Retry-After` is the same number however far apart the two requests run.
        let uptime: @Sendable () -> Double = { 1_000 }
        let routed = try InProcessApp(environment: Self.environment, uptime: uptime)
        let fast = try InProcessApp(environment: Self.environment, uptime: uptime)
        let channel = try await Self.connection(fast.app)

        var answered = 0
        func compare(_ sent: Sent) async throws -> Int {
            answered += 1
            let router = try await routed.request(.post, "/v1/batches", headers: sent.headers, body: sent.chunks.flatMap { $0 },
                                                  from: Self.client)
            let path = try await Self.exchange(sent, on: channel)
            #expect(path.status == router.status, "\(sent): status")
            #expect(Self.fields(path.headers) == Self.fields(router.headers), "\(sent): header fields")
            #expect(path.body == router.body, "\(sent): \(path.text) against \(router.text)")
            #expect(path.headers.contains { $0.0 == "Date" }, "\(sent): Date")
            return router.status
        }
        var statuses: [Int] = []
        for sent in Self.requests() { statuses.append(try await compare(sent)) }
        #expect(statuses == [202, 200, 202, 400, 400, 400, 415, 415, 413, 413, 413, 401, 401, 202])
        // The bucket runs dry at the same request on both paths.
        var limited = false
        for round in 0..<40 where !limited {
            let body = gzip(batchBody(samples: shows(2, height: 336)))
            let sent = Sent(name: "rate \(round)", headers: [("Authorization", "Bearer secret"), ("Content-Type", "application/json"),
                                                             ("Content-Encoding", "gzip"), ("Content-Length", String(body.count))],
                            chunks: [body])
            limited = try await compare(sent) == 429
        }
        #expect(limited, "the token bucket ran dry")
        // 503: the writer has stopped.
        await routed.app.writer.shutdown()
        await fast.app.writer.shutdown()
        try await Self.exchangeAfterShutdown(routed: routed, fast: fast)
        answered += 1

        for series in ["kbtd_batches_total{outcome=\"stored\"}", "kbtd_batches_total{outcome=\"duplicate\"}",
                       "kbtd_batches_total{outcome=\"rejected\"}", "kbtd_batches_total{outcome=\"unauthorized\"}",
                       "kbtd_batches_total{outcome=\"rate_limited\"}", "kbtd_batches_total{outcome=\"unavailable\"}",
                       "kbtd_samples_accepted_total"]
            + [200, 202, 400, 401, 413, 415, 429, 503].map({ "kbtd_http_requests_total{route=\"/v1/batches\",status=\"\($0)\"}" }) {
            let expected = try await routed.metric(series)
            #expect(expected != nil, "\(series) counted")
            #expect(try await fast.metric(series) == expected, "\(series)")
        }
        #expect(try await fast.metric("kbtd_fast_batches_total{protocol=\"http/1.1\"}") == Double(answered),
                "every answer of the batch path")
        #expect(try await routed.metric("kbtd_fast_batches_total{protocol=\"http/1.1\"}") ?? 0 == 0)
    }

    static func exchangeAfterShutdown(routed: InProcessApp, fast: InProcessApp) async throws {
        // A network the bucket has not emptied: the rate limit counts by client address.
        let body = gzip(batchBody(samples: shows(2, height: 336)))
        let headers = [("Authorization", "Bearer secret"), ("Content-Type", "application/json"), ("Content-Encoding", "gzip"),
                       ("Content-Length", String(body.count))]
        let other = try await connectionFrom("127.0.0.9", fast.app)
        let router = try await routed.request(.post, "/v1/batches", headers: headers, body: body, from: "127.0.0.9")
        let path = try await exchange(Sent(name: "503", headers: headers, chunks: [body]), on: other)
        #expect(router.status == 503)
        #expect(path.status == 503)
        #expect(fields(path.headers) == fields(router.headers))
        #expect(path.body == router.body, "\(path.text) against \(router.text)")
    }

    static func connectionFrom(_ address: String, _ app: KBTDApp) async throws -> NIOAsyncTestingChannel {
        let channel = NIOAsyncTestingChannel()
        try await channel.eventLoop.submit {
            let batches = BatchPath(app: app, clients: ClientAddressResolver(app.settings.current))
            try channel.pipeline.syncOperations.addHandlers(app.requestHandlers(.http1, limits: app.settings.current.limits,
                                                                                 batches: batches))
        }.get()
        try await channel.connect(to: SocketAddress.makeAddressResolvingHost(address, port: 40_000)).get()
        return channel
    }

    /// The `Content-Type` check reads an ASCII value as bytes (no Foundation bridging a batch) and
    /// must accept exactly what the Foundation reading it replaced accepts, quirks included: `split`
    /// drops an empty first piece, `.whitespaces` trims Unicode spaces such as U+00A0.
    @Test func contentTypeIsReadAsFoundationReadsIt() {
        let values = ["application/json", "APPLICATION/Json", " application/json ", "\tapplication/json\t",
                      "application/json; charset=utf-8", "application/json ;x", ";application/json", ";;application/json",
                      "application/json;", "application/jsonx", "application/jso", "xapplication/json", "", " ", ";", " ;",
                      "text/plain", "application/json\u{A0}", "\u{A0}application/json", "application/json\u{0B}",
                      "application/ json", "application/json\u{7F}", "Application/JSON\t; q=1"]
        for value in values {
            let foundation = (value.split(separator: ";", maxSplits: 1).first.map {
                $0.trimmingCharacters(in: .whitespaces).lowercased()
            } ?? "") == "application/json"
            #expect(BatchBody.Framing.isJSON(value) == foundation, "Content-Type \(value.debugDescription)")
        }
        #expect(BatchBody.Framing.isJSON(" Application/JSON ; charset=utf-8"))
        #expect(!BatchBody.Framing.isJSON("text/json"))
    }

    /// A body whose JSON is larger than what is counted on the event loop (`onLoopJSONBytes`) is
    /// counted on the pool and answered the same way.
    @Test func aLargeBatchIsCountedOffTheLoopAndAnswered() async throws {
        let app = try InProcessApp()
        let channel = try await Self.connection(app.app)
        let json = batchBody(samples: shows(600, height: 336))
        #expect(json.count > BatchIngestHandler.onLoopJSONBytes, "\(json.count) bytes of JSON")
        let body = gzip(json)
        let sent = Sent(name: "a batch of 600 samples",
                        headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip"),
                                  ("Content-Length", String(body.count))],
                        chunks: [body])
        let answer = try await Self.exchange(sent, on: channel)
        #expect(answer.status == 202, "\(answer.text)")
        #expect(answer.text.contains("\"accepted\":600"), "\(answer.text)")
    }

    /// What the batch path does not take reaches the router's side of the pipeline untouched.
    @Test func otherRequestsPassOnToTheRouter() async throws {
        let app = try InProcessApp()
        let channel = try await Self.connection(app.app)
        for (method, path, headers) in [(HTTPRequest.Method.get, "/v1/batches", [(String, String)]()),
                                        (.post, "/v1/batches?debug=1", []),
                                        (.post, "/v1/batches", [("Connection", "close")]),
                                        (.post, "/v1/batches", [("Expect", "x-other")])] {
            var fields = HTTPFields()
            for (name, value) in headers { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
            try await channel.writeInbound(HTTPRequestPart.head(HTTPRequest(method: method, scheme: "http", authority: "kbtd.test",
                                                                            path: path, headerFields: fields)))
            try await channel.writeInbound(HTTPRequestPart.end(nil))
            guard case .head(let head)? = try await channel.readInbound(as: HTTPRequestPart.self),
                  case .end? = try await channel.readInbound(as: HTTPRequestPart.self) else {
                Issue.record("\(method) \(path) \(headers) did not pass on")
                continue
            }
            #expect(head.path == path)
            // The router's answer, so the next request is not queued behind it.
            try await channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .notFound)))
            try await channel.writeOutbound(HTTPResponsePart.end(nil))
            _ = try await channel.readOutbound(as: HTTPResponsePart.self)
            _ = try await channel.readOutbound(as: HTTPResponsePart.self)
        }
        #expect(try await app.metric("kbtd_fast_batches_total{protocol=\"http/1.1\"}") == 0)
    }

    /// While a batch commits, the connection goes on reading as long as nothing waits (no `epoll_ctl`
    /// pair a batch); a request read meanwhile waits, and so do further reads and the client's
    /// half-closure, until the batch is answered: the half-closure must not reach the router's side
    /// (which would end the connection) before the 202 is written.
    @Test func readsGoOnWhileABatchCommitsUntilSomethingWaits() async throws {
        let app = try InProcessApp()
        let log = PipelineLog()
        let channel = try await Self.connection(app.app, log: log, passedOn: true)
        let body = gzip(batchBody(samples: shows(3, height: 336)))
        let headers: HTTPFields = [.contentType: "application/json", .contentEncoding: "gzip", .contentLength: String(body.count)]
        let batch = HTTPRequest(method: .post, scheme: "http", authority: "kbtd.test", path: "/v1/batches", headerFields: headers)
        let health = HTTPRequest(method: .get, scheme: "http", authority: "kbtd.test", path: "/healthz")
        // One turn of the event loop, so all of it happens before the commit's answer can come back.
        try await channel.eventLoop.submit {
            let pipeline = channel.pipeline.syncOperations
            for part in [HTTPRequestPart.head(batch), .body(ByteBuffer(bytes: body)), .end(nil)] {
                pipeline.fireChannelRead(NIOAny(part))
            }
            pipeline.fireChannelReadComplete()
            pipeline.read()
            pipeline.fireChannelRead(NIOAny(HTTPRequestPart.head(health)))
            pipeline.fireChannelRead(NIOAny(HTTPRequestPart.end(nil)))
            pipeline.fireChannelReadComplete()
            pipeline.read()
            pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        }.get()
        let answer = try await Self.answer(on: channel)
        #expect(answer.status == 202, "\(answer.text)")
        let entries = try await channel.eventLoop.submit { log.entries.withLock { $0 } }.get()
        #expect(entries == ["read", "head 202", "body", "end", "passed /healthz", "passed end", "inputClosed", "read"])
    }

    /// A batch pipelined behind a committing one, its body not all read yet, is taken once the first
    /// is answered and gets the read it waits for (it once waited for its body deadline instead).
    @Test func aPipelinedBatchStillArrivingGetsItsRead() async throws {
        let app = try InProcessApp()
        let log = PipelineLog()
        let channel = try await Self.connection(app.app, log: log)
        func batch(_ body: [UInt8]) -> HTTPRequest {
            HTTPRequest(method: .post, scheme: "http", authority: "kbtd.test", path: "/v1/batches",
                        headerFields: [.contentType: "application/json", .contentLength: String(body.count)])
        }
        let first = batchBody(samples: shows(2, height: 336))
        let second = batchBody(samples: shows(4, height: 330))
        let parts = [HTTPRequestPart.head(batch(first)), .body(ByteBuffer(bytes: first)), .end(nil),
                     .head(batch(second)), .body(ByteBuffer(bytes: second.prefix(10)))]
        try await channel.eventLoop.submit {
            let pipeline = channel.pipeline.syncOperations
            for part in parts {
                pipeline.fireChannelRead(NIOAny(part))
            }
            pipeline.fireChannelReadComplete()
            pipeline.read()
        }.get()
        let answer = try await Self.answer(on: channel)
        #expect(answer.status == 202, "\(answer.text)")
        let entries = try await channel.eventLoop.submit { log.entries.withLock { $0 } }.get()
        #expect(entries == ["head 202", "body", "end", "read"], "the second batch's read, once the first is answered")
        // The rest of the second body, as that read would bring it.
        try await channel.eventLoop.submit {
            let pipeline = channel.pipeline.syncOperations
            pipeline.fireChannelRead(NIOAny(HTTPRequestPart.body(ByteBuffer(bytes: second.dropFirst(10)))))
            pipeline.fireChannelRead(NIOAny(HTTPRequestPart.end(nil)))
            pipeline.fireChannelReadComplete()
        }.get()
        let next = try await Self.answer(on: channel)
        #expect(next.status == 202 && next.text.contains("\"accepted\":4"), "\(next.text)")
    }

    /// A request pipelined behind a batch is answered after the batch, and one the router has not
    /// answered yet keeps a batch behind it from being taken.
    @Test func pipelinedRequestsKeepTheirOrder() async throws {
        let app = try InProcessApp()
        let channel = try await Self.connection(app.app)
        let body = gzip(batchBody(samples: shows(5, height: 336)))
        let headers: HTTPFields = [.contentType: "application/json", .contentEncoding: "gzip", .contentLength: String(body.count)]
        let batch = HTTPRequest(method: .post, scheme: "http", authority: "kbtd.test", path: "/v1/batches", headerFields: headers)
        // The batch and, before its answer, a cached question.
        try await channel.writeInbound(HTTPRequestPart.head(batch))
        try await channel.writeInbound(HTTPRequestPart.body(ByteBuffer(bytes: body)))
        try await channel.writeInbound(HTTPRequestPart.end(nil))
        try await channel.writeInbound(HTTPRequestPart.head(HTTPRequest(method: .get, scheme: "http", authority: "kbtd.test",
                                                                        path: HTTPFrontTests.path)))
        try await channel.writeInbound(HTTPRequestPart.end(nil))
        let first = try await Self.answer(on: channel)
        let second = try await Self.answer(on: channel)
        #expect(first.status == 202, "the batch first: \(first.text)")
        #expect(first.text.contains("\"accepted\":5"))
        #expect(second.headers.contains { $0.0 == "ETag" }, "then the height answer: \(second.text)")

        // A request the router still answers: the batch behind it goes to the router too.
        try await channel.writeInbound(HTTPRequestPart.head(HTTPRequest(method: .get, scheme: "http", authority: "kbtd.test",
                                                                        path: "/healthz")))
        try await channel.writeInbound(HTTPRequestPart.end(nil))
        try await channel.writeInbound(HTTPRequestPart.head(batch))
        try await channel.writeInbound(HTTPRequestPart.end(nil))
        var passed: [HTTPRequestPart] = []
        while let part = try await channel.readInbound(as: HTTPRequestPart.self) { passed.append(part) }
        #expect(passed.count == 4, "both requests went on, in order")
        if case .head(let head)? = passed.last(where: { if case .head = $0 { true } else { false } }) {
            #expect(head.path == "/v1/batches")
        }
        #expect(try await app.metric("kbtd_fast_batches_total{protocol=\"http/1.1\"}") == 1)
    }
}

/// Holds `threads` of Swift's cooperative pool: each runs a task that blocks until `release()`.
final class PoolHold: Sendable {
    let threads: Int
    private let started = DispatchSemaphore(value: 0)
    private let gate = DispatchSemaphore(value: 0)

    init(threads: Int) {
        self.threads = threads
    }

    /// Starts the blocking tasks (detached: no executor preference, so on the pool) and returns once
    /// all of them run; at the deadline, lets them go and throws.
    func hold(until deadline: Deadline) throws {
        for _ in 0..<threads {
            Task.detached { [self] in block() }
        }
        for _ in 0..<threads {
            if started.wait(timeout: .now() + .milliseconds(Int(deadline.millisecondsLeft))) != .success {
                release()
                throw deadline.failure()
            }
        }
    }

    func release() {
        for _ in 0..<threads { gate.signal() }
    }

    private func block() {
        started.signal()
        gate.wait()
    }
}

/// The reads and writes that leave a test pipeline at its head and what reaches its end, in order
/// (touched on the channel's event loop only; the mutex makes the log `Sendable`).
final class PipelineLog: Sendable {
    let entries = Mutex<[String]>([])

    func add(_ entry: String) { entries.withLock { $0.append(entry) } }

    final class Outbound: ChannelOutboundHandler {
        typealias OutboundIn = HTTPResponsePart
        let log: PipelineLog
        init(_ log: PipelineLog) { self.log = log }

        func read(context: ChannelHandlerContext) {
            log.add("read")
            context.read()
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            switch unwrapOutboundIn(data) {
            case .head(let head): log.add("head \(head.status.code)")
            case .body: log.add("body")
            case .end: log.add("end")
            }
            context.write(data, promise: promise)
        }
    }

    final class Inbound: ChannelInboundHandler {
        typealias InboundIn = HTTPRequestPart
        let log: PipelineLog
        init(_ log: PipelineLog) { self.log = log }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head): log.add("passed \(head.path ?? "")")
            case .body: log.add("passed body")
            case .end: log.add("passed end")
            }
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if case .inputClosed? = event as? ChannelEvent { log.add("inputClosed") }
        }
    }
}

/// `BatchPathTests`' case that holds the whole cooperative pool, in a suite of its own: it blocks
/// its thread (`.ownThreads`), and an `.ownThreads` suite takes 10 minutes, since the limit counts
/// the wait for a turn among the `.ownThreads` cases (under `BatchPathTests`' 2 minutes, a parallel
/// run's wait failed it). The other cases keep their 2 minutes.
@Suite("The batch path with every pool thread held", .ownThreads, .timeLimit(.minutes(10)))
struct BatchPathPoolTests {
    /// The batch path needs no cooperative-pool thread: the intake and the commit run in a task on
    /// the connection's event loop, and the writer's completion resumes the task there. With every
    /// pool thread held, a batch is still answered; it used to wait for a pool thread twice (to
    /// start its task, and to go on once the writer had committed it). It holds the whole pool, so
    /// it runs in a test process of its own (`AloneInAProcess`): in the suite's, the tests running
    /// beside it hold pool threads too (it once waited 60 s for them under load) and would starve.
    @Test func aBatchIsAnsweredWhileEveryPoolThreadIsBusy() async throws {
        let name = "aBatchIsAnsweredWhileEveryPoolThreadIsBusy"
        guard AloneInAProcess.isThisProcess(for: name) else {
            try await AloneInAProcess.run(name)
            return
        }
        let app = try InProcessApp()
        let channel = try await BatchPathTests.connection(app.app)
        let body = gzip(batchBody(samples: shows(4, height: 336)))
        let sent = BatchPathTests.Sent(name: "a batch while the pool is held",
                                       headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip"),
                                                 ("Content-Length", String(body.count))],
                                       chunks: [body])
        // At most the pool's width (one thread per logical CPU), so all of them start.
        let pool = PoolHold(threads: ProcessInfo.processInfo.activeProcessorCount)
        try pool.hold(until: Deadline(60, for: "\(pool.threads) cooperative-pool threads to be held"))
        let answered = OnceEvent()
        let exchange = Task(executorPreference: BlockingTestExecutor.shared) {
            defer { answered.fire() }
            return try await BatchPathTests.exchange(sent, on: channel)
        }
        let deadline = Deadline(30, for: "the batch's answer while every cooperative-pool thread was held")
        let inTime = answered.wait(until: deadline)
        pool.release()
        let answer = try await exchange.value
        #expect(inTime, "\(deadline.failure())")
        #expect(answer.status == 202, "\(answer.text)")
        #expect(answer.text.contains("\"accepted\":4"), "\(answer.text)")
    }
}
