import HTTPTypes
import NIOCore

/// The fast path's first stage, on a connection's bytes in front of the HTTP
/// decoder: while a client sends nothing but plain `GET /v1/height` and
/// `GET /v1/heights` requests (a phone asking for its heights), each is
/// answered here with the same bytes the router would send, written straight
/// to the socket: no HTTP decoding into parts, no response encoding, no hop
/// to an async handler.
///
/// It reads conservatively and gives up at the first doubt: anything but
/// `GET <target> HTTP/1.1` with well-formed header lines, a request with
/// `Content-Length`, `Transfer-Encoding`, `Connection`, `Upgrade` or
/// `Expect`, more than one `If-None-Match`, a byte outside printable ASCII,
/// a head over 8 KiB, or a question `CachedAnswers` leaves to the router.
/// Then every byte not yet answered (the doubtful request and whatever
/// follows) goes on to NIO's HTTP decoder unchanged, and so does everything
/// after on that connection, where `CachedAnswerHandler` still answers cached
/// questions at the HTTP level. So a request is either answered here exactly
/// as the router would answer it, or reaches the router as if this handler
/// were not there.
///
/// Backpressure: answers are written only as fast as the client reads them. Once a read's answers
/// pass `flushBytes` they are flushed, and while the channel is not writable (more than its high
/// watermark, 64 KiB, waits for the socket) no answer is written and no read is made: what waits
/// is the answers already written and the unanswered bytes of one read. Writing resumes when the
/// channel is writable again. A client that pipelines requests and never reads its answers so
/// holds a bounded amount, whatever it sends.
final class CachedAnswerBytesHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// The longest request head read here; a longer one goes to the decoder (which has its own limits).
    static let maxHead = 8192
    /// Answer bytes written in one turn before they are flushed and the channel's writability checked.
    static let flushBytes = 64 << 10

    private let answers: CachedAnswers
    /// Bytes read and not yet answered or passed on: a request head not complete yet, or the
    /// requests that wait while the client does not read.
    private var pending: ByteBuffer?
    /// Once true, every byte goes to the decoder.
    private(set) var passing = false
    /// The channel was not writable: nothing is answered or read until it is.
    private var paused = false
    /// A `read` asked for while paused.
    private var readWaiting = false
    /// The client's half-closure, come while paused: handled after the requests before it.
    private var inputClosed: Any?

    init(_ answers: CachedAnswers) {
        self.answers = answers
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !passing else {
            context.fireChannelRead(data)
            return
        }
        var bytes = unwrapInboundIn(data)
        if var earlier = pending {
            earlier.writeBuffer(&bytes)
            bytes = earlier
        }
        pending = nil
        answer(bytes, context: context)
    }

    /// Answers the requests at the start of `bytes` while the channel is writable; keeps what is
    /// left (a partial head, or requests waiting for the client to read) in `pending`.
    private func answer(_ input: ByteBuffer, context: ChannelHandlerContext) {
        var bytes = input
        var answered = false
        var unflushed = 0
        while bytes.readableBytes > 0 {
            if unflushed >= Self.flushBytes {
                context.flush()
                unflushed = 0
            }
            if !context.channel.isWritable {
                paused = true
                pending = bytes
                break
            }
            switch bytes.readableBytesView.withContiguousStorageIfAvailable(Self.parse) ?? .other {
            case .incomplete:
                pending = bytes
            case .other:
                passOn(bytes, context: context)
            case .get(let length, let target, let ifNoneMatch):
                guard let answer = answers.answer(target: target, ifNoneMatch: ifNoneMatch,
                                                  allocator: context.channel.allocator) else {
                    passOn(bytes, context: context)
                    break
                }
                unflushed += answer.readableBytes
                context.write(wrapOutboundOut(answer), promise: nil)
                answered = true
                bytes.moveReaderIndex(forwardBy: length)
                continue
            }
            break
        }
        if answered {
            context.flush()
            if !context.channel.isWritable { paused = true }
            context.fireUserInboundEventTriggered(ResponseWrittenBelowCodec())
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if paused, context.channel.isWritable {
            paused = false
            if let bytes = pending {
                pending = nil
                answer(bytes, context: context)
            }
            if !paused {
                if let event = inputClosed {
                    inputClosed = nil
                    userInboundEventTriggered(context: context, event: event)
                }
                if readWaiting {
                    readWaiting = false
                    context.read()
                }
            }
        }
        context.fireChannelWritabilityChanged()
    }

    func read(context: ChannelHandlerContext) {
        if paused, !passing {
            readWaiting = true
            return
        }
        context.read()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if !passing, let closed = event as? ChannelEvent, closed == .inputClosed {
            // Requests that wait for the client to read are answered before the closure is handled.
            if paused {
                inputClosed = event
                return
            }
            // The client closed its side: a partial head is the decoder's to judge.
            passOn(pending ?? context.channel.allocator.buffer(capacity: 0), context: context)
            pending = nil
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func passOn(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        passing = true
        if bytes.readableBytes > 0 { context.fireChannelRead(wrapInboundOut(bytes)) }
    }

    enum Parsed: Equatable {
        /// A prefix of a request this handler may answer: wait for more bytes.
        case incomplete
        /// Not for this handler: the decoder and the router take it from here.
        case other
        /// A plain GET whose head is `length` bytes.
        case get(length: Int, target: String, ifNoneMatch: String?)
    }

    private static let prefix = Array("GET /v1/height".utf8)
    private static let version = Array(" HTTP/1.1\r\n".utf8)
    /// Headers that change how a request is framed or answered: the router's path handles them.
    private static let refused: Set<String> = ["content-length", "transfer-encoding", "connection", "upgrade", "expect"]

    /// Reads one request head from the start of `bytes`.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Parsed {
        let count = bytes.count
        for index in 0..<min(count, prefix.count) where bytes[index] != prefix[index] { return .other }
        // The head ends at the first CR LF CR LF. A bare LF or a CR not followed by LF is not
        // HTTP/1.1 framing: the decoder answers it (400) at once, rather than this handler
        // waiting for a CR LF CR LF that will never come.
        var end = -1
        var index = prefix.count
        let limit = min(count, maxHead)
        while index < limit {
            let byte = bytes[index]
            if byte == 10 { return .other }
            if byte == 13 {
                guard index + 1 < limit else { break }
                guard bytes[index + 1] == 10 else { return .other }
                if index + 3 < limit, bytes[index + 2] == 13, bytes[index + 3] == 10 {
                    end = index
                    break
                }
                if index + 2 < limit, bytes[index + 2] == 10 { return .other }
                index += 2
                continue
            }
            index += 1
        }
        guard end >= 0 else { return count >= maxHead ? .other : .incomplete }
        // Request line: "GET " target " HTTP/1.1" CR LF, the target printable ASCII without spaces.
        var position = 4
        while position < end, bytes[position] > 0x20, bytes[position] < 0x7F { position += 1 }
        let target = String(decoding: UnsafeBufferPointer(rebasing: bytes[4..<position]), as: UTF8.self)
        guard position + version.count <= end + 2 else { return .other }
        for offset in 0..<version.count where bytes[position + offset] != version[offset] { return .other }
        position += version.count
        // Header lines up to the head's end: token ":" printable ASCII or tabs.
        var ifNoneMatch: String?
        while position < end + 2 {
            let nameStart = position
            while position < end, isToken(bytes[position]) { position += 1 }
            guard position > nameStart, position < end, bytes[position] == UInt8(ascii: ":") else { return .other }
            let name = String(decoding: UnsafeBufferPointer(rebasing: bytes[nameStart..<position]), as: UTF8.self).lowercased()
            position += 1
            let valueStart = position
            while position < end + 2, bytes[position] != 13 {
                let byte = bytes[position]
                guard byte == 9 || (byte >= 0x20 && byte < 0x7F) else { return .other }
                position += 1
            }
            guard position + 1 < count, bytes[position + 1] == 10 else { return .other }
            if refused.contains(name) { return .other }
            if name == "if-none-match" {
                guard ifNoneMatch == nil else { return .other }
                var value = UnsafeBufferPointer(rebasing: bytes[valueStart..<position])[...]
                while let first = value.first, first == 32 || first == 9 { value = value.dropFirst() }
                while let last = value.last, last == 32 || last == 9 { value = value.dropLast() }
                ifNoneMatch = String(decoding: value, as: UTF8.self)
            }
            position += 2
        }
        return .get(length: end + 4, target: target, ifNoneMatch: ifNoneMatch)
    }

    /// RFC 9110's tchar.
    private static func isToken(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
