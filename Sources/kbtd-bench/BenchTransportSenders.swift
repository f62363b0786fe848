import Dispatch
import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2

// The connections of `kbtd-bench ingest-over` (BenchTransports.swift): each sends the run's
// bodies one request after another and counts the answers into the run's `LoadState`.

/// One HTTP/1.1 connection (plain or after TLS): a request, its answer, the next request.
final class HTTP1Sender: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let load: LoadState
    private var mine = LoadState.Tally()
    private var pending = ByteBuffer()
    private var sent = ContinuousClock.now
    private var reported = false

    init(load: LoadState) { self.load = load }

    func channelActive(context: ChannelHandlerContext) {
        sendNext(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        report(failed: false)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        FileHandle.standardError.write(Data("ingest-over: \(error)\n".utf8))
        report(failed: true)
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var bytes = unwrapInboundIn(data)
        pending.writeBuffer(&bytes)
        guard let (status, length) = Self.answer(in: pending) else { return }
        pending.moveReaderIndex(forwardBy: length)
        pending.discardReadBytes()
        mine.latencies.append((ContinuousClock.now - sent) / .milliseconds(1))
        mine.statuses[status, default: 0] += 1
        sendNext(context: context)
    }

    private func sendNext(context: ChannelHandlerContext) {
        guard let index = load.take() else {
            report(failed: false)
            context.close(promise: nil)
            return
        }
        let gzip = load.bodies.encoding == .gzip ? "Content-Encoding: gzip\r\n" : ""
        let head = "POST /v1/batches HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n\(gzip)Content-Length: \(load.bodies.length(index))\r\n\r\n"
        var request = context.channel.allocator.buffer(capacity: head.utf8.count + load.bodies.length(index))
        request.writeString(head)
        load.bodies.write(index, into: &request)
        sent = ContinuousClock.now
        context.writeAndFlush(wrapOutboundOut(request), promise: nil)
    }

    /// The status and total length of the complete answer at the front of `bytes`, or nil while it is incomplete.
    static func answer(in bytes: ByteBuffer) -> (Int, Int)? {
        let view = bytes.readableBytesView
        guard let end = view.firstRange(of: [13, 10, 13, 10]) else { return nil }
        let head = String(decoding: view[view.startIndex..<end.lowerBound], as: UTF8.self)
        let status = Int(head.split(separator: " ", maxSplits: 2)[1]) ?? 0
        var length = 0
        for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
            length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
        }
        let total = end.upperBound - view.startIndex + length
        return view.count >= total ? (status, total) : nil
    }

    private func report(failed: Bool) {
        guard !reported else { return }
        reported = true
        if failed { mine.failures += 1 }
        load.add(mine)
    }
}

/// One h2 connection in frame mode: `streams` requests in flight, each answered stream replaced by a new
/// one. Its own inbound windows are opened as the answers arrive (frame mode opens none).
final class HTTP2Sender: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private let load: LoadState
    private let streams: Int
    private let authority: String
    private var mine = LoadState.Tally()
    private var open: [HTTP2StreamID: (sent: ContinuousClock.Instant, status: Int)] = [:]
    private var nextID = HTTP2StreamID(1)
    private var unacknowledged = 0
    private var flushPending = false
    private var finished = false
    private var reported = false

    init(load: LoadState, streams: Int, authority: String) {
        self.load = load
        self.streams = streams
        self.authority = authority
    }

    func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        for _ in 0..<streams { openStream(context: context) }
        context.flush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !open.isEmpty { mine.failures += open.count }
        report()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        mine.failures += 1
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let headers):
            if let status = headers.headers.first(name: ":status").flatMap({ Int($0) }) { open[frame.streamID]?.status = status }
            if headers.endStream { finish(frame.streamID, context: context) }
        case .data(let payload):
            if case .byteBuffer(let bytes) = payload.data {
                unacknowledged += bytes.readableBytes + (payload.paddingBytes ?? 0)
                if unacknowledged >= 32_768 {
                    context.write(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: unacknowledged))),
                                  promise: nil)
                    unacknowledged = 0
                    flushPending = true
                }
            }
            if payload.endStream { finish(frame.streamID, context: context) }
        case .rstStream:
            if open.removeValue(forKey: frame.streamID) != nil { mine.failures += 1 }
            openStream(context: context)
        case .goAway:
            finished = true
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if flushPending {
            flushPending = false
            context.flush()
        }
        if finished, open.isEmpty {
            report()
            context.close(promise: nil)
        }
        context.fireChannelReadComplete()
    }

    private func finish(_ stream: HTTP2StreamID, context: ChannelHandlerContext) {
        guard let done = open.removeValue(forKey: stream) else { return }
        mine.latencies.append((ContinuousClock.now - done.sent) / .milliseconds(1))
        mine.statuses[done.status, default: 0] += 1
        openStream(context: context)
    }

    private func openStream(context: ChannelHandlerContext) {
        guard !finished, let index = load.take() else {
            finished = true
            return
        }
        let stream = nextID
        nextID = HTTP2StreamID(Int32(stream) + 2)
        var fields: [(String, String)] = [
            (":method", "POST"), (":scheme", "https"), (":authority", authority), (":path", "/v1/batches"),
            ("content-type", "application/json"), ("content-length", String(load.bodies.length(index))),
        ]
        if load.bodies.encoding == .gzip { fields.append(("content-encoding", "gzip")) }
        var body = context.channel.allocator.buffer(capacity: load.bodies.length(index))
        load.bodies.write(index, into: &body)
        open[stream] = (ContinuousClock.now, 0)
        context.write(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: HPACKHeaders(fields))))), promise: nil)
        context.write(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .data(.init(data: .byteBuffer(body), endStream: true)))),
                      promise: nil)
        flushPending = true
    }

    private func report() {
        guard !reported else { return }
        reported = true
        load.add(mine)
    }
}
