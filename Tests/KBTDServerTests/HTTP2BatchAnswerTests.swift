import Foundation
#if canImport(Glibc)
import Glibc
#endif
import KBTDTestSupport
import Logging
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
@testable import KBTDServer
import Testing

/// `HTTP2FrameFront`'s batch answers leaving the event loop: the answers the commits finish while the
/// loop is busy go out together, with one flush (one TLS record, one `write`), where each answer
/// used to be flushed on its own. A real client `NIOHTTP2Handler` and the server's frame layer with
/// `FlushCoalescer` (as TLS sees it), on two testing channels whose event loop runs only when the
/// test says: the commits (the app's real intake and SQLite store) finish off the loop meanwhile, in
/// tasks on the pool (a small batch's task runs on the loop itself; `HTTP2BatchPathTests` covers it).
@Suite("h2 batch answers, one flush per delivery", .timeLimit(.minutes(1)))
struct HTTP2BatchAnswerTests {
    struct Link {
        let server: NIOAsyncTestingChannel
        let client: NIOAsyncTestingChannel
        let answers: HTTP2FrameFront.Answers

        init(_ app: InProcessApp) async throws {
            let clients = ClientAddressResolver(app.app.settings.current)
            let server = NIOAsyncTestingChannel(), client = NIOAsyncTestingChannel()
            self.server = server
            self.client = client
            answers = try await server.testingEventLoop.executeInContext {
                let handler = HTTP2FrameFront(app.app.front, clients: clients, deadlines: RequestDeadlines(app.app.settings.current.limits))
                // Every batch's task on the pool (as a batch over 64 KiB of JSON's): the test holds
                // the loop while the commits finish, which a task on the loop could not do.
                handler.onLoopJSONBytes = 0
                let pipeline = server.pipeline.syncOperations
                try pipeline.addHandler(FlushCoalescer())
                try pipeline.addHandler(NIOHTTP2Handler(mode: .server))
                try pipeline.addHandler(handler)
                return handler.answers
            }
            try await client.testingEventLoop.executeInContext {
                try client.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: .client))
            }
            let address = try SocketAddress(ipAddress: "127.0.0.1", port: 8420)
            try await server.connect(to: address).get()
            try await client.connect(to: address).get()
            try await shuttle()
        }

        /// Carries bytes both ways until neither side has anything left to send.
        func shuttle() async throws {
            var moved = true
            while moved {
                moved = false
                while let bytes = try await client.readOutbound(as: ByteBuffer.self) {
                    try await server.writeInbound(bytes)
                    moved = true
                }
                while let bytes = try await server.readOutbound(as: ByteBuffer.self) {
                    try await client.writeInbound(bytes)
                    moved = true
                }
            }
        }

        func finish() async {
            _ = try? await client.finish()
            _ = try? await server.finish()
        }
    }

    /// Sixteen batches on one connection, read in one turn of the event loop that then stays busy
    /// until their commits (the app's intake and SQLite store, off the loop) have all finished:
    /// the sixteen answers reach the socket in one write, where each answer's own hop to the loop
    /// and flush made sixteen. Each answer is a 202 with END_STREAM, and every batch is counted.
    @Test func theAnswersFinishedWhileTheLoopIsBusyLeaveInOneWrite() async throws {
        let app = try InProcessApp()
        let link = try await Link(app)
        let streams = (0..<16).map { HTTP2StreamID(1 + 2 * $0) }
        for stream in streams {
            let body = batchBody(samples: shows(5, height: 336))
            let block = HPACKHeaders([(":method", "POST"), (":scheme", "https"), (":authority", "kbtd.test"),
                                      (":path", "/v1/batches"), ("content-type", "application/json"),
                                      ("content-length", String(body.count))])
            try await link.client.writeOutbound(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: block))))
            try await link.client.writeOutbound(HTTP2Frame(streamID: stream,
                                                           payload: .data(.init(data: .byteBuffer(ByteBuffer(bytes: body)), endStream: true))))
        }
        var requests = ByteBuffer()
        while var bytes = try await link.client.readOutbound(as: ByteBuffer.self) { requests.writeBuffer(&bytes) }

        // One read of the sixteen requests; the loop is held until every commit has posted its answer.
        let server = link.server, answers = link.answers, sent = requests
        let finished = try await server.testingEventLoop.executeInContext {
            server.pipeline.fireChannelRead(sent)
            server.pipeline.fireChannelReadComplete()
            let deadline = NIODeadline.now() + .seconds(30)
            while answers.count < streams.count, NIODeadline.now() < deadline { sched_yield() }
            return answers.count
        }
        #expect(finished == streams.count, "awaited \(streams.count) answers finished while the loop was busy")
        await server.testingEventLoop.run()

        // Which of the server's writes carried the answers' frames.
        var writesWithAnswers = 0
        var statuses: [HTTP2StreamID: String] = [:], ended: Set<HTTP2StreamID> = []
        while let bytes = try await server.readOutbound(as: ByteBuffer.self) {
            try await link.client.writeInbound(bytes)
            var carried = false
            while let frame = try await link.client.readInbound(as: HTTP2Frame.self) {
                switch frame.payload {
                case .headers(let head):
                    carried = true
                    statuses[frame.streamID] = head.headers.first(name: ":status")
                    #expect(head.headers.first(name: "content-type") == "application/json")
                case .data(let data):
                    carried = true
                    if data.endStream { ended.insert(frame.streamID) }
                default:
                    continue
                }
            }
            if carried { writesWithAnswers += 1 }
        }
        #expect(writesWithAnswers == 1, "the sixteen answers in one write, not one each")
        for stream in streams {
            #expect(statuses[stream] == "202", "stream \(stream)")
            #expect(ended.contains(stream), "stream \(stream) ended")
        }
        #expect(try await app.metric("kbtd_fast_batches_total{protocol=\"h2\"}") == Double(streams.count))
        #expect(answers.count == 0, "every answer was taken")
        await link.finish()
    }
}
