import NIOCore
import NIOEmbedded
import NIOHTTP2
@testable import KBTDServer
import Testing

/// What one client can make the front hold or do, counted in bytes and frames on in-memory
/// channels: the body budget's shares and the WINDOW_UPDATE allowance.
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

    /// WINDOW_UPDATE frames past the allowance (with no DATA sent to earn them) end the connection
    /// with GOAWAY `ENHANCE_YOUR_CALM`; DATA written (by the multiplexer's streams, passing the frame
    /// front) raises the allowance.
    @Test func aWindowUpdateFloodEndsTheConnection() throws {
        let app = try InProcessApp()
        let front = {
            HTTP2FrameFront(app.app.front, clients: ClientAddressResolver(app.app.settings.current),
                            deadlines: RequestDeadlines(app.app.settings.current.limits), windowUpdateAllowance: 10)
        }
        /// The frames the front wrote, less the connection window it opens at the client's first frame.
        func written(_ channel: EmbeddedChannel) throws -> [HTTP2Frame.FramePayload] {
            var frames: [HTTP2Frame.FramePayload] = []
            while let frame = try channel.readOutbound(as: HTTP2Frame.self) {
                if case .windowUpdate = frame.payload, frame.streamID == .rootStream { continue }
                frames.append(frame.payload)
            }
            return frames
        }
        let update = HTTP2Frame(streamID: 1, payload: .windowUpdate(windowSizeIncrement: 1))
        let flooded = EmbeddedChannel(handler: front())
        try flooded.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        #expect(flooded.isActive)
        for _ in 0..<10 { try flooded.writeInbound(update) }
        #expect(try written(flooded).isEmpty)
        try flooded.writeInbound(update)
        guard case .goAway(_, let code, _)? = try written(flooded).first else {
            Issue.record("no GOAWAY after the allowance")
            return
        }
        #expect(code == .enhanceYourCalm)
        #expect(!flooded.isActive, "the connection is closed")
        var passedOn = 0
        while try flooded.readInbound(as: HTTP2Frame.self) != nil { passedOn += 1 }
        #expect(passedOn == 10)

        let reading = EmbeddedChannel(handler: front())
        try reading.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        defer { _ = try? reading.finish() }
        for _ in 0..<20 {
            try reading.writeOutbound(HTTP2Frame(streamID: 1, payload: .data(.init(data: .byteBuffer(ByteBuffer(string: "x"))))))
        }
        for _ in 0..<50 { try reading.writeInbound(update) }
        #expect(reading.isActive, "two updates per DATA frame written are an honest client's")
        var dataFrames = 0
        for frame in try written(reading) {
            if case .data = frame { dataFrames += 1 } else { Issue.record("a frame other than DATA: \(frame)") }
        }
        #expect(dataFrames == 20)
    }

    /// The allowance counts per period: a new period forgives the updates and forgets the DATA frames of
    /// the last, and DATA written earns two updates each only within its period.
    @Test func theWindowUpdateAllowanceStartsAgainEachPeriod() {
        let start = NIODeadline.uptimeNanoseconds(1_000_000_000)
        var allowance = WindowUpdateAllowance(allowance: 3)
        /// Whether each of `count` updates at `now` is admitted.
        func admitted(_ count: Int, at now: NIODeadline) -> [Bool] {
            (0..<count).map { _ in allowance.admitUpdate(now: now) }
        }
        #expect(admitted(3, at: start) == [true, true, true], "the allowance itself")
        let later = start + WindowUpdateAllowance.period - .nanoseconds(1)
        allowance.countData(now: later)
        #expect(admitted(3, at: later) == [true, true, false], "a DATA frame written earns two more, no more")
        let next = start + WindowUpdateAllowance.period
        #expect(admitted(4, at: next) == [true, true, true, false],
                "a new period starts from nothing, and the last period's DATA frames earn nothing in it")
    }
}
