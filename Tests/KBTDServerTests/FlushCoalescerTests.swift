import NIOCore
import NIOEmbedded
import NIOHTTP1
import Synchronization
@testable import KBTDServer
import Testing

/// `FlushCoalescer` on its own: what an h2 connection writes between two flushes reaches TLS as
/// one write of at most a record's 16 KiB, in order, with every write's promise kept, and nothing
/// waits past a flush or a close.
@Suite("Writes gathered per flush for TLS")
struct FlushCoalescerTests {
    private func channel() throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(FlushCoalescer())
        return channel
    }

    private func bytes(_ count: Int, _ value: UInt8) -> ByteBuffer {
        ByteBuffer(repeating: value, count: count)
    }

    /// Every buffer the channel wrote to the socket since the last look.
    private func written(_ channel: EmbeddedChannel) throws -> [ByteBuffer] {
        var buffers: [ByteBuffer] = []
        while let buffer = try channel.readOutbound(as: IOData.self) {
            guard case .byteBuffer(let bytes) = buffer else {
                Issue.record("a file region came out")
                continue
            }
            buffers.append(bytes)
        }
        return buffers
    }

    @Test func framesWrittenBeforeAFlushGoOutAsOneWriteInOrder() throws {
        let channel = try channel()
        defer { _ = try? channel.finish() }
        var promises: [EventLoopFuture<Void>] = []
        for (index, size) in [9, 104, 9, 2276, 9, 104, 9, 2276].enumerated() {
            let promise = channel.eventLoop.makePromise(of: Void.self)
            promises.append(promise.futureResult)
            channel.write(IOData.byteBuffer(bytes(size, UInt8(index))), promise: promise)
        }
        #expect(try written(channel).isEmpty, "nothing goes out before the flush")
        channel.flush()
        let out = try written(channel)
        #expect(out.count == 1, "one write for the whole flush: \(out.map(\.readableBytes))")
        var expected = ByteBuffer()
        for (index, size) in [9, 104, 9, 2276, 9, 104, 9, 2276].enumerated() {
            var part = bytes(size, UInt8(index))
            expected.writeBuffer(&part)
        }
        #expect(out.first == expected, "the bytes of every write, in the order written")
        for future in promises { #expect(throws: Never.self) { try future.wait() } }
    }

    @Test func aSingleWriteIsPassedOnAtTheFlush() throws {
        let channel = try channel()
        defer { _ = try? channel.finish() }
        channel.write(IOData.byteBuffer(bytes(40, 7)), promise: nil)
        channel.flush()
        #expect(try written(channel) == [bytes(40, 7)])
        // Again on an idle connection: nothing is held between flushes.
        channel.writeAndFlush(IOData.byteBuffer(bytes(13, 8)), promise: nil)
        #expect(try written(channel) == [bytes(13, 8)])
    }

    @Test func writesPastARecordStartANewWriteAndLargeBuffersPassUncopied() throws {
        let channel = try channel()
        defer { _ = try? channel.finish() }
        let record = FlushCoalescer.recordBytes
        channel.write(IOData.byteBuffer(bytes(record - 100, 1)), promise: nil)
        channel.write(IOData.byteBuffer(bytes(50, 2)), promise: nil)
        channel.write(IOData.byteBuffer(bytes(100, 3)), promise: nil)  // would pass 16 KiB: a new write
        channel.write(IOData.byteBuffer(bytes(record * 3, 4)), promise: nil)  // large: on its own, after what came before
        channel.write(IOData.byteBuffer(bytes(9, 5)), promise: nil)
        channel.flush()
        let out = try written(channel)
        #expect(out.map(\.readableBytes) == [record - 50, 100, record * 3, 9])
        #expect(out.allSatisfy { $0.readableBytes <= record || $0 == bytes(record * 3, 4) })
        var all = ByteBuffer()
        for var buffer in out { all.writeBuffer(&buffer) }
        var expected = ByteBuffer()
        for (size, value) in [(record - 100, 1), (50, 2), (100, 3), (record * 3, 4), (9, 5)] {
            var part = bytes(size, UInt8(value))
            expected.writeBuffer(&part)
        }
        #expect(all == expected, "every byte, in order")
    }

    /// Records what reaches it from the coalescer (on TLS's side of it).
    final class Recorder: ChannelOutboundHandler, Sendable {
        typealias OutboundIn = IOData
        let events = Mutex<[String]>([])

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            if case .byteBuffer(let bytes) = unwrapOutboundIn(data) { events.withLock { $0.append("write \(bytes.readableBytes)") } }
            context.write(data, promise: promise)
        }

        func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
            events.withLock { $0.append("close") }
            context.close(mode: mode, promise: promise)
        }
    }

    @Test func aCloseSendsWhatWasGatheredFirst() throws {
        let channel = EmbeddedChannel()
        let recorder = Recorder()
        try channel.pipeline.syncOperations.addHandler(recorder)
        try channel.pipeline.syncOperations.addHandler(FlushCoalescer())
        channel.write(IOData.byteBuffer(bytes(9, 1)), promise: nil)
        channel.write(IOData.byteBuffer(bytes(24, 9)), promise: nil)
        #expect(recorder.events.withLock { $0 }.isEmpty, "gathered, waiting for a flush")
        try channel.close().wait()
        #expect(recorder.events.withLock { $0 } == ["write 33", "close"], "what was gathered goes on before the close, in one write")
    }

    /// The HTTP/1.1 encoder's writes for one answer, flushed: `via` puts a coalescer between it and the socket.
    private func answerWrites(via coalescer: FlushCoalescer?, body: Int) throws -> [ByteBuffer] {
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish() }
        if let coalescer { try channel.pipeline.syncOperations.addHandler(coalescer) }
        try channel.pipeline.syncOperations.addHandler(HTTPResponseEncoder())
        var head = HTTPResponseHead(version: .http1_1, status: .accepted)
        head.headers.add(name: "Content-Type", value: "application/json")
        head.headers.add(name: "Content-Length", value: String(body))
        channel.write(HTTPServerResponsePart.head(head), promise: nil)
        channel.write(HTTPServerResponsePart.body(.byteBuffer(bytes(body, 0x61))), promise: nil)
        let end = channel.eventLoop.makePromise(of: Void.self)
        channel.writeAndFlush(HTTPServerResponsePart.end(nil), promise: end)
        try end.futureResult.wait()
        return try written(channel).filter { $0.readableBytes > 0 }
    }

    /// On a TLS HTTP/1.1 connection (`ListenerChannel`) an answer's head and body were two TLS
    /// records; behind the coalescer they are one write, the encoder's bytes unchanged, also when
    /// the answer outgrows the first buffer.
    @Test(arguments: [60, 3_000])
    func anHTTP1AnswerReachesTLSAsOneWrite(body: Int) throws {
        let plain = try answerWrites(via: nil, body: body)
        #expect(plain.count == 2, "without it: the head, then the body")
        let coalesced = try answerWrites(via: FlushCoalescer(firstCapacity: 1024), body: body)
        #expect(coalesced.count == 1, "one write for the answer: \(coalesced.map(\.readableBytes))")
        var expected = ByteBuffer()
        for var part in plain { expected.writeBuffer(&part) }
        #expect(coalesced.first == expected, "the encoder's bytes, in order")
    }
}
