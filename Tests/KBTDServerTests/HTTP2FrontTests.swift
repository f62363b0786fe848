import Foundation
import Logging
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
@testable import KBTDServer
import Testing

/// kbtd's h2 connection (`HTTP2Connection`) in-process: a real client `NIOHTTP2Handler` talks to the
/// server pipeline a TLS listener stacks once ALPN chose h2, bytes carried between two embedded
/// channels. Cached heights and batches are served from the frames (`HTTP2FrameFront`), heights with the
/// router's fields and bytes; every other stream goes to the multiplexer, whose streams the router serves.
@Suite("The h2 connection built with the app", .timeLimit(.minutes(1)))
struct HTTP2FrontTests {
    /// A server connection and an h2 client joined back to back.
    struct Link {
        let server = EmbeddedChannel()
        let client = EmbeddedChannel()
        /// The streams the router would serve, as the multiplexer hands them over (`route`); finished when the server closes.
        let streams: AsyncStream<HTTP2Connection.Stream>

        init(_ app: InProcessApp, clientSettings: HTTP2Settings = nioDefaultSettings) async throws {
            let settings = app.app.settings.current
            let channels = app.app.channels(limits: settings.limits, logger: Logger(label: "h2-test"),
                                            clients: ClientAddressResolver(settings))
            let address = try SocketAddress(ipAddress: "127.0.0.1", port: 8420)
            try await server.connect(to: address).get()
            let (streams, opened) = AsyncStream.makeStream(of: HTTP2Connection.Stream.self)
            self.streams = streams
            try channels.http2.configure(channel: server, logger: Logger(label: "h2-test")) { opened.yield($0) }
            server.closeFuture.whenComplete { _ in opened.finish() }
            try client.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: .client, initialSettings: clientSettings))
            try await client.connect(to: address).get()
            try shuttle()
        }

        /// Carries bytes both ways until neither side has anything left to send.
        func shuttle() throws {
            var moved = true
            while moved {
                moved = false
                while let bytes = try client.readOutbound(as: ByteBuffer.self) {
                    try server.writeInbound(bytes)
                    moved = true
                }
                while let bytes = try server.readOutbound(as: ByteBuffer.self) {
                    try client.writeInbound(bytes)
                    moved = true
                }
            }
        }

        /// Sends a request's HEADERS (END_STREAM) on `stream` and returns the frames that came back on it.
        func get(_ path: String, stream: Int, method: String = "GET", headers: [(String, String)] = []) throws -> [HTTP2Frame.FramePayload] {
            let block = HPACKHeaders([(":method", method), (":scheme", "https"), (":authority", "kbtd.test"), (":path", path)] + headers)
            try client.writeOutbound(HTTP2Frame(streamID: HTTP2StreamID(stream), payload: .headers(.init(headers: block, endStream: true))))
            try shuttle()
            var frames: [HTTP2Frame.FramePayload] = []
            while let frame = try client.readInbound(as: HTTP2Frame.self) {
                if frame.streamID == HTTP2StreamID(stream) { frames.append(frame.payload) }
            }
            return frames
        }

        func finish() {
            _ = try? client.finish()
            _ = try? server.finish()
        }
    }

    @Test func cachedHeightsAreAnsweredFromTheFramesWithTheRoutersFieldsAndBytes() async throws {
        let app = try InProcessApp()
        let batch = try await app.post(gzip(batchBody(samples: shows(25, height: 336))), encoding: "gzip", from: "unix")
        #expect(batch.status == 202, "\(batch.text)")
        let routed = try await app.get(HTTPFrontTests.path)
        #expect(routed.status == 200)
        let link = try await Link(app)
        defer { link.finish() }

        let answer = try link.get(HTTPFrontTests.path, stream: 1)
        #expect(answer.count == 2, "a HEADERS and a DATA frame: \(answer)")
        guard answer.count == 2, case .headers(let head) = answer[0], case .data(let data) = answer[1],
              case .byteBuffer(let body) = data.data else { return }
        #expect(!head.endStream && data.endStream, "END_STREAM on the last frame")
        #expect(head.headers.first(name: ":status") == "200")
        let fields = head.headers.filter { !$0.name.hasPrefix(":") }.map { ($0.name, $0.value) }
        #expect(fields.last?.0 == "date", "Date last, as the other paths add it")
        #expect(HTTPFrontTests.fields(fields) == HTTPFrontTests.fields(routed.headers), "the router's fields, in its order")
        #expect(Array(body.readableBytesView) == routed.body, "the router's bytes")

        // 304 on a matching If-None-Match: one HEADERS frame, END_STREAM on it.
        let etag = try #require(routed.header("etag"))
        let revalidated = try link.get(HTTPFrontTests.path, stream: 3, headers: [("if-none-match", etag)])
        #expect(revalidated.count == 1, "\(revalidated)")
        if case .headers(let notModified)? = revalidated.first {
            #expect(notModified.endStream && notModified.headers.first(name: ":status") == "304")
            // The fields HTTP/1.1's fast path sends with it (no Content-Length on a 304).
            let rendered = try #require(app.app.front.answer(target: HTTPFrontTests.path, ifNoneMatch: etag))
            #expect(HTTPFrontTests.fields(notModified.headers.filter { !$0.name.hasPrefix(":") }.map { ($0.name, $0.value) })
                    == HTTPFrontTests.fields(rendered.fields.map { ($0.name.rawName, $0.value) }))
            #expect(try await app.get(HTTPFrontTests.path, headers: [("If-None-Match", etag)]).status == 304)
        } else {
            Issue.record("no HEADERS frame for the 304: \(revalidated)")
        }

        // Everything else is the router's: no frame answers it here, the multiplexer opens a stream for it.
        for (stream, method, path) in [(5, "GET", "/healthz"), (7, "HEAD", HTTPFrontTests.path), (9, "GET", "/v1/heights?model=iPhone17,1&os=x")] {
            #expect(try link.get(path, stream: stream, method: method).isEmpty, "\(method) \(path) answered from the frames")
        }
        // Closed, the connection finishes its sequence of streams (what it had opened stays in it).
        try await link.server.close()
        link.server.embeddedEventLoop.run()
        var opened = 0
        for await stream in link.streams {
            opened += 1
            try await stream.executeThenClose { _, _ in }
        }
        #expect(opened == 3, "one stream for the router per request not answered from the frames")

        #expect(try await app.metric("kbtd_fast_answers_total{protocol=\"h2\"}") == 2)
        #expect(try await app.metric("kbtd_http_requests_total{route=\"/v1/height\",status=\"200\"}") == 2,
                "the router's answer and the frames' answer")
        #expect(try await app.metric("kbtd_http_requests_total{route=\"/v1/height\",status=\"304\"}") == 2,
                "the frames' 304 and the router's")
    }

    /// Eight cached GETs arriving in one read (a phone's burst) get eight complete answers, each
    /// the router's bytes, and what goes to TLS is a few writes of at most a record's 16 KiB
    /// (`FlushCoalescer`), not three writes (three records) an answer.
    @Test func aBurstOfCachedAnswersReachesTLSInRecordSizedWrites() async throws {
        let app = try InProcessApp()
        let batch = try await app.post(gzip(batchBody(samples: shows(25, height: 336))), encoding: "gzip", from: "unix")
        #expect(batch.status == 202, "\(batch.text)")
        let path = "/v1/heights?model=iPhone17,1"
        let routed = try await app.get(path)
        #expect(routed.status == 200)
        let link = try await Link(app)
        defer { link.finish() }
        let streams = Array(stride(from: 1, through: 15, by: 2))
        for stream in streams {
            let block = HPACKHeaders([(":method", "GET"), (":scheme", "https"), (":authority", "kbtd.test"), (":path", path)])
            link.client.write(HTTP2Frame(streamID: HTTP2StreamID(stream), payload: .headers(.init(headers: block, endStream: true))),
                              promise: nil)
        }
        link.client.flush()
        var burst = ByteBuffer()
        while var bytes = try link.client.readOutbound(as: ByteBuffer.self) { burst.writeBuffer(&bytes) }
        try link.server.writeInbound(burst)  // one read, then its read-complete

        var writes: [ByteBuffer] = []
        while let bytes = try link.server.readOutbound(as: ByteBuffer.self) { writes.append(bytes) }
        let total = writes.reduce(0) { $0 + $1.readableBytes }
        #expect(total > streams.count * routed.body.count, "every answer's body went out")
        #expect(writes.allSatisfy { $0.readableBytes <= FlushCoalescer.recordBytes }, "\(writes.map(\.readableBytes))")
        #expect(writes.count <= 2 * ((total + FlushCoalescer.recordBytes - 1) / FlushCoalescer.recordBytes),
                "record-sized writes, not three an answer: \(writes.map(\.readableBytes))")

        for bytes in writes { try link.client.writeInbound(bytes) }
        var heads: [HTTP2StreamID: HPACKHeaders] = [:], bodies: [HTTP2StreamID: [UInt8]] = [:], ended: Set<HTTP2StreamID> = []
        while let frame = try link.client.readInbound(as: HTTP2Frame.self) {
            switch frame.payload {
            case .headers(let head):
                heads[frame.streamID] = head.headers
                if head.endStream { ended.insert(frame.streamID) }
            case .data(let data):
                if case .byteBuffer(let body) = data.data { bodies[frame.streamID, default: []] += Array(body.readableBytesView) }
                if data.endStream { ended.insert(frame.streamID) }
            default:
                continue
            }
        }
        for stream in streams.map({ HTTP2StreamID($0) }) {
            #expect(heads[stream]?.first(name: ":status") == "200", "stream \(stream)")
            #expect(bodies[stream] == routed.body, "stream \(stream): the router's bytes")
            #expect(ended.contains(stream), "stream \(stream) ended")
        }
        #expect(try await app.metric("kbtd_fast_answers_total{protocol=\"h2\"}") == Double(streams.count))
    }

    /// The client's TCP end (input closed) closes the connection at once, writing nothing more (no TLS
    /// close_notify would be sealed: the close does not pass TLS), after a request answered on an otherwise
    /// idle connection got its whole answer.
    @Test func theClientsEndClosesTheConnectionWithoutAnotherWrite() async throws {
        let app = try InProcessApp()
        let link = try await Link(app)
        defer { link.finish() }
        let answer = try link.get("/v1/heights?model=iPhone17,1", stream: 1)
        #expect(answer.count == 2, "one request on an idle connection gets its HEADERS and DATA: \(answer)")
        if case .data(let data)? = answer.last { #expect(data.endStream) }
        link.server.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        link.server.embeddedEventLoop.run()
        #expect(!link.server.isActive, "closed on the client's end")
        #expect(try link.server.readOutbound(as: ByteBuffer.self) == nil, "nothing written after the client's end")
    }

    /// A client that never opens its window gets the HEADERS frame, and the stream is reset once it
    /// has waited `idle_timeout_seconds` for the window (a virtual clock: the embedded loop's).
    @Test func anAnswerTheClientsWindowNeverAdmitsIsResetAfterTheIdleTimeout() async throws {
        let app = try InProcessApp()
        let link = try await Link(app, clientSettings: [HTTP2Setting(parameter: .initialWindowSize, value: 0),
                                                        HTTP2Setting(parameter: .maxConcurrentStreams, value: 100)])
        defer { link.finish() }
        let waiting = try link.get("/v1/heights?model=iPhone17,1", stream: 1)
        #expect(waiting.count == 1, "only the HEADERS frame goes out: \(waiting)")
        if case .headers(let head)? = waiting.first { #expect(!head.endStream && head.headers.first(name: ":status") == "200") }
        let idle = Int64(app.app.settings.current.limits.idleTimeoutSeconds)
        link.server.embeddedEventLoop.advanceTime(by: .seconds(idle - 1))
        try link.shuttle()
        #expect(try link.client.readInbound(as: HTTP2Frame.self) == nil, "nothing before the timeout")
        link.server.embeddedEventLoop.advanceTime(by: .seconds(1))
        try link.shuttle()
        var reset: HTTP2ErrorCode?
        while let frame = try link.client.readInbound(as: HTTP2Frame.self) {
            if frame.streamID == 1, case .rstStream(let code) = frame.payload { reset = code }
        }
        #expect(reset == .cancel, "the stalled stream is reset")
    }

    /// One connection, one timer, two deadlines (`RequestDeadlines`): a batch whose body stops coming is
    /// reset `body_timeout_seconds` after its HEADERS, an answer the client's window never admits
    /// `idle_timeout_seconds` after it was written; neither earlier, and neither resets the other
    /// (a virtual clock: the embedded loop's).
    @Test func aSlowBatchBodyAndAStalledAnswerAreEachResetAtTheirOwnDeadline() async throws {
        let app = try InProcessApp(environment: ["KBTD_BODY_TIMEOUT_SECONDS": "20", "KBTD_IDLE_TIMEOUT_SECONDS": "50"])
        let link = try await Link(app, clientSettings: [HTTP2Setting(parameter: .initialWindowSize, value: 0),
                                                        HTTP2Setting(parameter: .maxConcurrentStreams, value: 100)])
        defer { link.finish() }
        let stalled = try link.get("/v1/heights?model=iPhone17,1", stream: 1)
        #expect(stalled.count == 1, "only the HEADERS frame goes out: \(stalled)")
        let block = HPACKHeaders([(":method", "POST"), (":scheme", "https"), (":authority", "kbtd.test"), (":path", "/v1/batches"),
                                  ("content-type", "application/json"), ("content-length", "1000")])
        try link.client.writeOutbound(HTTP2Frame(streamID: 3, payload: .headers(.init(headers: block))))
        let part = ByteBuffer(string: "{\"batch_id\"")  // the body stops coming here
        try link.client.writeOutbound(HTTP2Frame(streamID: 3, payload: .data(.init(data: .byteBuffer(part)))))
        try link.shuttle()
        /// The streams reset (RST_STREAM CANCEL) after `seconds` more of the loop's clock.
        func resets(after seconds: Int64) throws -> [HTTP2StreamID] {
            link.server.embeddedEventLoop.advanceTime(by: .seconds(seconds))
            try link.shuttle()
            var reset: [HTTP2StreamID] = []
            while let frame = try link.client.readInbound(as: HTTP2Frame.self) {
                if case .rstStream(let code) = frame.payload {
                    #expect(code == .cancel)
                    reset.append(frame.streamID)
                }
            }
            return reset
        }
        #expect(try resets(after: 19) == [], "nothing before the body deadline")
        #expect(try resets(after: 1) == [3], "the slow body's stream at body_timeout_seconds")
        #expect(try resets(after: 29) == [], "nothing before the idle deadline")
        #expect(try resets(after: 1) == [1], "the stalled answer's stream at idle_timeout_seconds")
        #expect(try await app.metric("kbtd_fast_answers_total{protocol=\"h2\"}") == 1)
    }
}
