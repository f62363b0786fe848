import NIOCore

/// Gathers the bytes an h2 connection writes between two flushes into one buffer of up to a
/// TLS record's 16 KiB, so TLS seals them in as few records as it can.
///
/// `NIOSSLHandler` turns every write it is given into its own `SSL_write`, that is its own TLS
/// record (a header, a tag, a seal), and `NIOHTTP2Handler` writes each frame as one or two
/// buffers: a cached answer's HEADERS frame, then its DATA frame's 9-byte header, then the body.
/// Without this, every answer cost three records; with it, the answers of one read (eight
/// streams of a phone's burst) share one or two, as nginx's `ssl_buffer_size` 16k gathers them.
/// A buffer of a record's size or more
/// passes on uncopied (what was gathered before it first). Nothing is held past a flush or a
/// close: what was gathered goes on to TLS first, in order, with its writes' promises.
///
/// It sits between `NIOSSLHandler` and `NIOHTTP2Handler` on every h2 connection (`HTTP2Connection`),
/// and between `NIOSSLHandler` and the HTTP/1.1 encoder on a TLS HTTP/1.1 connection
/// (`ListenerChannel`), where an answer is a head, a body and an empty end: one record instead of two.
final class FlushCoalescer: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    /// A TLS record's most plaintext: more in one write only makes more records of the same size.
    static let recordBytes = 16 * 1024

    /// The first buffer of this handler's own: a record's size on h2 (a read's answers fill it),
    /// smaller on HTTP/1.1, whose answer between two flushes is one head and body (it grows if need be).
    private let firstCapacity: Int
    /// The bytes written since the last flush, not passed on yet.
    private var gathered: ByteBuffer?
    /// True once `gathered` is a buffer of this handler's own (later writes are appended to it).
    private var owned = false
    /// The promise of the gathered bytes (the later writes' promises cascade from it).
    private var promise: EventLoopPromise<Void>?

    init(firstCapacity: Int = FlushCoalescer.recordBytes) {
        self.firstCapacity = firstCapacity
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .byteBuffer(let bytes) = unwrapOutboundIn(data), bytes.readableBytes < Self.recordBytes else {
            passOn(context: context)
            context.write(data, promise: promise)
            return
        }
        if var buffer = gathered {
            if buffer.readableBytes + bytes.readableBytes > Self.recordBytes {
                passOn(context: context)
                gathered = bytes
            } else {
                if !owned {
                    // The first write's buffer is the writer's (NIOHTTP2Handler reuses it): copy it into one of ours.
                    var own = context.channel.allocator.buffer(
                        capacity: max(firstCapacity, buffer.readableBytes + bytes.readableBytes))
                    own.writeImmutableBuffer(buffer)
                    buffer = own
                    owned = true
                }
                gathered = nil  // one reference: append in place
                buffer.writeImmutableBuffer(bytes)
                gathered = buffer
            }
        } else {
            gathered = bytes
        }
        if let promise {
            if let first = self.promise {
                first.futureResult.cascade(to: promise)
            } else {
                self.promise = promise
            }
        }
    }

    func flush(context: ChannelHandlerContext) {
        passOn(context: context)
        context.flush()
    }

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        passOn(context: context)
        context.close(mode: mode, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        passOn(context: context)
    }

    /// Writes what was gathered (not flushed: the caller decides).
    private func passOn(context: ChannelHandlerContext) {
        guard let buffer = gathered else { return }
        let promise = self.promise
        gathered = nil
        owned = false
        self.promise = nil
        context.write(wrapOutboundOut(.byteBuffer(buffer)), promise: promise)
    }
}
