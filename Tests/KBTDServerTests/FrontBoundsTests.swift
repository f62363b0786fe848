import Foundation
import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTP2
import NIOHTTPTypes
@testable import KBTDServer
import Testing

/// What one client can make the front hold or do, counted in bytes and frames on in-memory
/// channels: the body budget's shares, the bytes path writing only as fast as the client reads,
/// `100 Continue` on the batch path, and the WINDOW_UPDATE allowance.
@Suite("The front's bounds, in-process", .timeLimit(.minutes(2)))
struct FrontBoundsTests {
    @Test func theBodyBudgetGivesEachNetworkAQuarterAndEachGroupHalf() {
        let budget = BodyBudget()
        let limit = 1_000
        let first = budget.lease(network: "198.51.100.1", group: "198.51.0.0/16")
        #expect(first.resize(to: 250, limit: limit) == nil)
        #expect(first.resize(to: 251, limit: limit) == .client, "a network holds at most a quarter")
        let second = budget.lease(network: "198.51.100.2", group: "198.51.0.0/16")
        #expect(second.resize(to: 250, limit: limit) == nil)
        let third = budget.lease(network: "198.51.100.3", group: "198.51.0.0/16")
        #expect(third.resize(to: 1, limit: limit) == .group, "a group holds at most half")
        let others = (0..<2).map { budget.lease(network: "203.0.113.\($0)", group: "203.0.\($0).0/16") }
        #expect(others.map { $0.resize(to: 250, limit: limit) } == [nil, nil])
        #expect(budget.lease(network: "192.0.2.1", group: "192.0.0.0/16").resize(to: 1, limit: limit) == .total)
        #expect(budget.held == 1_000)
        // A refused resize keeps what the lease held; a released lease gives it all back.
        #expect(first.held == 250)
        first.release()
        #expect(third.resize(to: 250, limit: limit) == nil, "room came back to the group")
        _ = consume second
        #expect(budget.held == 750, "a lease gives back what it held when it goes")
    }

    /// A client that pipelines 1,000 GETs in one read and reads nothing: once the channel is not
    /// writable, no more answers are written and no more is read; as the client reads, the rest
    /// are answered, in order, each once.
    @Test func theBytesPathWritesOnlyAsFastAsTheClientReads() throws {
        let app = try InProcessApp()
        let socket = UnwritableAfter(bytes: 64 << 10)
        let connection = EmbeddedChannel(handlers: [socket, CachedAnswerBytesHandler(app.app.answers)])
        defer { _ = try? connection.finish() }
        let request = "GET /v1/heights?model=iPhone17,1&os=26.1 HTTP/1.1\r\nHost: kbtd.test\r\n\r\n"
        try connection.writeInbound(ByteBuffer(string: String(repeating: request, count: 1_000)))
        var answers = 0
        var outbound = ""
        func drain() throws {
            while let buffer = try connection.readOutbound(as: ByteBuffer.self) { outbound += String(buffer: buffer) }
            answers = outbound.components(separatedBy: "HTTP/1.1 200 OK\r\n").count - 1
        }
        try drain()
        let perAnswer = outbound.utf8.count / max(answers, 1)
        #expect(answers > 0 && answers <= (64 << 10) / perAnswer + 1,
                "\(answers) answers of \(perAnswer) bytes written into a socket that took 64 KiB")
        connection.pipeline.read()
        #expect(socket.reads == 0, "no read while answers wait for the client")
        var rounds = 0
        while answers < 1_000, rounds < 1_000 {
            rounds += 1
            socket.clientRead(connection)
            try drain()
        }
        #expect(answers == 1_000, "every request answered once")
        #expect(socket.reads == 1, "the read held back went out once the answers were taken")
        #expect(try connection.readInbound(as: ByteBuffer.self) == nil, "nothing went on to the decoder")
    }

    /// `Expect: 100-continue` on the batch path: `100 Continue` once the head passes, then the
    /// answer; a head refused on its own (here its media type) gets the refusal and no 100.
    @Test func theBatchPathSendsContinueWhenTheHeadPasses() async throws {
        let app = try InProcessApp()
        let body = batchBody(samples: shows(3, height: 336))
        for (contentType, status) in [("application/json", 202), ("text/plain", 415)] {
            let channel = try await BatchPathTests.connection(app.app)
            var fields = HTTPFields()
            fields[.contentType] = contentType
            fields[.contentLength] = String(body.count)
            fields[.expect] = "100-continue"
            try await channel.writeInbound(HTTPRequestPart.head(HTTPRequest(method: .post, scheme: "http", authority: "kbtd.test",
                                                                            path: "/v1/batches", headerFields: fields)))
            if status == 202 {
                guard case .head(let interim) = try await channel.waitForOutboundWrite(as: HTTPResponsePart.self) else {
                    Issue.record("no interim head")
                    return
                }
                #expect(interim.status == .continue)
            }
            try await channel.writeInbound(HTTPRequestPart.body(ByteBuffer(bytes: body)))
            try await channel.writeInbound(HTTPRequestPart.end(nil))
            let answer = try await BatchPathTests.answer(on: channel)
            #expect(answer.status == status, "\(contentType): \(answer.text)")
            _ = try await channel.finish()
        }
    }

    /// WINDOW_UPDATE frames past the allowance (with no DATA sent to earn them) end the connection
    /// with GOAWAY `ENHANCE_YOUR_CALM`; DATA written raises the allowance.
    @Test func aWindowUpdateFloodEndsTheConnection() throws {
        let update = HTTP2Frame(streamID: 1, payload: .windowUpdate(windowSizeIncrement: 1))
        let flooded = EmbeddedChannel(handler: WindowUpdateGuard(allowance: 10, window: .seconds(30)))
        try flooded.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        #expect(flooded.isActive)
        for _ in 0..<10 { try flooded.writeInbound(update) }
        #expect(try flooded.readOutbound(as: HTTP2Frame.self) == nil)
        try flooded.writeInbound(update)
        guard case .goAway(_, let code, _)? = try flooded.readOutbound(as: HTTP2Frame.self)?.payload else {
            Issue.record("no GOAWAY after the allowance")
            return
        }
        #expect(code == .enhanceYourCalm)
        #expect(!flooded.isActive, "the connection is closed")
        var passedOn = 0
        while try flooded.readInbound(as: HTTP2Frame.self) != nil { passedOn += 1 }
        #expect(passedOn == 10)

        let reading = EmbeddedChannel(handler: WindowUpdateGuard(allowance: 10, window: .seconds(30)))
        try reading.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        defer { _ = try? reading.finish() }
        for _ in 0..<20 {
            try reading.writeOutbound(HTTP2Frame(streamID: 1, payload: .data(.init(data: .byteBuffer(ByteBuffer(string: "x"))))))
        }
        for _ in 0..<50 { try reading.writeInbound(update) }
        #expect(reading.isActive, "two updates per DATA frame written are an honest client's")
        var dataFrames = 0
        while let frame = try reading.readOutbound(as: HTTP2Frame.self) {
            if case .data = frame.payload { dataFrames += 1 } else { Issue.record("a frame other than DATA: \(frame.payload)") }
        }
        #expect(dataFrames == 20)
    }
}

/// The socket side of an in-memory connection: it takes `bytes` of writes, then is not writable
/// until `clientRead` (the client reads everything written), and counts the reads asked of it.
final class UnwritableAfter: ChannelOutboundHandler {
    typealias OutboundIn = ByteBuffer
    private let bytes: Int
    private var taken = 0
    private(set) var reads = 0

    init(bytes: Int) {
        self.bytes = bytes
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        taken += unwrapOutboundIn(data).readableBytes
        if taken >= bytes, let channel = context.channel as? EmbeddedChannel { channel.isWritable = false }
        context.write(data, promise: promise)
    }

    func read(context: ChannelHandlerContext) {
        reads += 1
        context.read()
    }

    func clientRead(_ channel: EmbeddedChannel) {
        taken = 0
        channel.isWritable = true
        channel.pipeline.fireChannelWritabilityChanged()
    }
}
