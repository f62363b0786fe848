import HTTPTypes
import NIOCore
import NIOHPACK
import NIOHTTP2
import Synchronization

/// The batch path on an HTTP/2 connection, at the level of frames (`HTTP2Connection`, after
/// `HTTP2FastAnswerHandler`, before the stream multiplexer): a stream whose HEADERS frame opens a
/// `POST /v1/batches` that `Front.takesBatch` is served here with no stream channel, codec or task
/// of its own. The rules are the router's, asked of `Front`: the rate limit and
/// the token when the HEADERS frame arrives, `BatchBody.Framing` for the headers (a refusal is
/// answered at once and the rest of the body dropped), the wire cap and the body budget as DATA
/// frames arrive (each frame's bytes fed to the stream's `BatchBody` as they come, as the HTTP/1.1
/// router feeds its body); at END_STREAM the body is finished (inflated), counted and committed in a
/// task on the connection's event loop (`EventLoopTaskExecutor`), or
/// on the cooperative pool for JSON over 64 KiB (`onLoopJSONBytes`), and the
/// `JSONAnswer` goes back as a HEADERS and a DATA frame (END_STREAM), with the router's fields and `Date`. The answers
/// the commits finish while the event loop is busy go back together, with one flush (`Answers`):
/// a group commit's answers on one connection cost one TLS record and one `write`, not one each.
///
/// Flow control: `NIOHTTP2Handler` in frame mode enforces the windows but opens none itself, and a
/// stream channel opens its stream's window as it reads. A stream taken here has no channel, so this
/// handler sends the stream's WINDOW_UPDATE as it consumes DATA (every `windowStep` bytes). It also
/// keeps the connection's window open, at `connectionWindow` (1 MiB: every batch stream's first
/// 64 KiB at once) rather than the 65,535 bytes the multiplexer after it would keep (its one
/// `targetWindowSize` would also set every stream's window): with 16 batches in flight, a 64 KiB
/// connection window cost a WINDOW_UPDATE (its own flush, TLS record and write) every 32 KiB.
/// The connection's `NIOHTTP2WindowUpdatedEvent`s therefore stop here. Streams keep their 65,535-byte windows, so
/// the multiplexer's streams hold at most that each, and at most `maxStreams` streams per
/// connection are taken here at once, so a connection buffers at most `maxStreams` x
/// `max_compressed_bytes` here; more go to the multiplexer. A stream whose body has not ended
/// `body_timeout_seconds` after its HEADERS is reset (RST_STREAM CANCEL), as a stream channel's
/// deadline would close it.
///
/// Every frame of a stream taken here stays here until swift-nio-http2 reports the stream closed:
/// the multiplexer has no channel for it, and would call a later frame an error. So do the
/// stream's events (its window updates and its close).
final class HTTP2BatchHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// Streams one connection may have on this path at once.
    static let maxStreams = 16
    /// Bytes of a stream's body consumed before its window is opened again (half the initial window).
    static let windowStep = 32_768
    /// The connection's receive window this handler keeps open (RFC 9113 starts it at 65,535).
    static let connectionWindow = maxStreams * 65_536

    private enum Phase {
        case reading
        /// Answered before its body ended: the rest is dropped.
        case refused
        case committing
        /// Answered; waiting for swift-nio-http2 to close the stream.
        case answered
    }

    private struct Taken {
        var phase: Phase
        var framing: BatchBody.Framing?
        var client: KBTDRequestContext
        /// The body so far: each DATA frame's bytes are fed to it as they arrive (see `feed`).
        var body: BatchBody?
        var unacknowledged = 0
        var deadline: NIODeadline
    }

    private let front: Front
    private let clients: ClientAddressResolver
    private let bodyTimeout: TimeAmount
    private var streams: [HTTP2StreamID: Taken] = [:]
    private var lastStream = HTTP2StreamID(0)
    private var flushPending = false
    /// The connection's window has been raised to `connectionWindow`.
    private var windowRaised = false
    private var sweep: Scheduled<Void>?
    /// The answers the commits' tasks have finished and the event loop has not sent yet.
    let answers = Answers()
    /// The event loop the batches' tasks run on (`EventLoopTaskExecutor.cached`).
    private var taskExecutor: EventLoopTaskExecutor?
    /// JSON up to this size is counted on the loop, larger on the pool (a test sets 0: every batch
    /// on the pool, to hold the loop while the commits finish).
    var onLoopJSONBytes = HTTP2BatchHandler.onLoopJSONBytes

    /// JSON up to this size is counted on the event loop (a 100-sample batch is about 20 KB, some
    /// 40 µs of intake); a larger body (up to `max_samples_per_batch`, milliseconds of intake) is
    /// counted on the cooperative pool, so the loop's other connections (height answers) do not wait.
    static let onLoopJSONBytes = 64 << 10

    init(_ front: Front, clients: ClientAddressResolver, bodyTimeout: TimeAmount) {
        self.front = front
        self.clients = clients
        self.bodyTimeout = bodyTimeout
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        sweep?.cancel()
        sweep = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        if !windowRaised {
            // The client's first frame (its SETTINGS) has arrived: the connection is open both ways.
            windowRaised = true
            updateWindow(of: .rootStream, by: Self.connectionWindow - 65_535, context: context)
        }
        if !streams.isEmpty, streams[frame.streamID] != nil {
            receive(frame, context: context)
            return
        }
        if case .headers(let headers) = frame.payload, frame.streamID > lastStream {
            lastStream = frame.streamID
            if !headers.endStream, streams.count < Self.maxStreams, let request = Self.request(headers.headers),
               front.takesBatch(request) {
                take(request, on: frame.streamID, context: context)
                return
            }
        }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flushIfPending(context)
        context.fireChannelReadComplete()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // The events of a stream taken here stop here, as its frames do: the multiplexer has no
        // channel for it (and casting each event again in every handler after this one is work).
        switch event {
        case let window as NIOHTTP2WindowUpdatedEvent:
            if window.streamID == .rootStream {
                // The connection's window is this handler's to keep (the multiplexer would aim at 65,535).
                if windowRaised, let open = window.inboundWindowSize, open <= Self.connectionWindow / 2 {
                    updateWindow(of: .rootStream, by: Self.connectionWindow - open, context: context)
                }
                return
            }
            if !streams.isEmpty, streams[window.streamID] != nil { return }
        case let closed as StreamClosedEvent:
            if !streams.isEmpty, streams.removeValue(forKey: closed.streamID) != nil { return }
        default:
            break
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func updateWindow(of stream: HTTP2StreamID, by increment: Int, context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .windowUpdate(windowSizeIncrement: increment))),
                      promise: nil)
        flushPending = true
    }

    /// The request a header block opens, or nil when it is not one this path reads
    /// (swift-nio-http2 has validated the block: pseudo-header fields first, lower-case names).
    static func request(_ block: HPACKHeaders) -> HTTPRequest? {
        var method: String?, scheme: String?, authority: String?, target: String?
        var fields = HTTPFields()
        for (name, value, _) in block {
            switch name {
            case ":method": method = value
            case ":scheme": scheme = value
            case ":authority": authority = value
            case ":path": target = value
            default:
                guard !name.hasPrefix(":"), let fieldName = HTTPField.Name(name) else { return nil }
                fields.append(HTTPField(name: fieldName, value: value))
            }
        }
        guard method == "POST", let target else { return nil }
        return HTTPRequest(method: .post, scheme: scheme, authority: authority, path: target, headerFields: fields)
    }

    private func take(_ request: HTTPRequest, on stream: HTTP2StreamID, context: ChannelHandlerContext) {
        let client = front.context(channel: context.channel, headers: request.headerFields, clients: clients)
        var taken = Taken(phase: .reading, client: client, deadline: .now() + bodyTimeout)
        if let refusal = front.admitBatch(client, headers: request.headerFields) {
            taken.phase = .refused
            streams[stream] = taken
            send(refusal, on: stream, context: context)
        } else {
            do {
                let (framing, body) = try front.batchBody(request.headerFields, client: client)
                taken.framing = framing
                taken.body = body
                streams[stream] = taken
                if Front.expectsContinue(request) {
                    context.write(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: [":status": "100"])))),
                                  promise: nil)
                    flushPending = true
                }
            } catch {
                taken.phase = .refused
                streams[stream] = taken
                send(front.ingest.rejected(error), on: stream, context: context)
            }
        }
        if sweep == nil { scheduleSweep(context: context) }
    }

    private func receive(_ frame: HTTP2Frame, context: ChannelHandlerContext) {
        let stream = frame.streamID
        let ended: Bool
        switch frame.payload {
        case .data(let payload):
            guard case .byteBuffer(let bytes) = payload.data else { return }
            let length = bytes.readableBytes + (payload.paddingBytes ?? 0)
            streams[stream]!.unacknowledged += length
            // The body counts its bytes against the wire cap and the budget (`BatchBody.feed`).
            if streams[stream]!.phase == .reading, bytes.readableBytes > 0 {
                feed(bytes, of: stream, context: context)
            }
            ended = payload.endStream
            if !ended, streams[stream]!.unacknowledged >= Self.windowStep {
                let increment = streams[stream]!.unacknowledged
                streams[stream]!.unacknowledged = 0
                updateWindow(of: stream, by: increment, context: context)
            }
        case .headers(let trailers):
            // Trailers end the body; their fields are not read (the router's path ignores them too).
            ended = trailers.endStream
        default:
            // WINDOW_UPDATE, RST_STREAM, PRIORITY: swift-nio-http2 has applied them; nothing else has a use for them.
            return
        }
        guard ended, let taken = streams[stream] else { return }
        switch taken.phase {
        case .reading:
            streams[stream]!.phase = .committing
            streams[stream]!.body = nil
            commit(taken, on: stream, context: context)
        case .refused, .committing, .answered:
            break
        }
    }

    /// Feeds a DATA frame's bytes to the stream's body, which copies them into the bytes it holds
    /// (under the client's share of the body budget) and inflates at the end, so no slice of the
    /// frame is held. A slice shares the storage of the whole decrypted read it came
    /// from (NIOSSL's, up to hundreds of KiB), and swift-nio-http2's frame decoder appends the next
    /// read to the rest of that storage: while a slice of it was held here, every append copied the
    /// whole storage first (copy-on-write) into a fresh allocation, faulted in page by page.
    /// Feeding as frames arrive is one
    /// copy of the body's bytes; keeping them in a buffer of the stream's own and feeding them at
    /// the end was two. A refusal (a cap passed, a deflate stream that does not inflate) is answered
    /// at once and the rest of the body dropped, as on HTTP/1.1.
    private func feed(_ bytes: ByteBuffer, of stream: HTTP2StreamID, context: ChannelHandlerContext) {
        do {
            try streams[stream]!.body!.feed(bytes)
        } catch {
            streams[stream]!.phase = .refused
            streams[stream]!.body = nil
            send(front.ingest.rejected(error), on: stream, context: context)
        }
    }

    /// Finishes the body on the event loop (a gzip body inflated, as on HTTP/1.1), then counts and
    /// commits it in a task on the loop (`EventLoopTaskExecutor`: no cooperative-pool thread) or,
    /// for JSON over `onLoopJSONBytes`, on the
    /// pool, so the loop's other streams and connections do not wait for a large batch's intake.
    /// The answer comes back on the event loop through `answers`, with the other answers finished
    /// meanwhile (see `Answers`).
    private func commit(_ taken: Taken, on stream: HTTP2StreamID, context: ChannelHandlerContext) {
        guard let framing = taken.framing, let fed = taken.body else { return }
        let ingest = front.ingest, client = taken.client, answers = self.answers
        let eventLoop = context.eventLoop
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: eventLoop)
        let finished: Result<BatchJSON, JSONRefusal>
        do { finished = .success(try fed.finish()) } catch { finished = .failure(error) }
        let large = ((try? finished.get())?.bytes.count ?? 0) > onLoopJSONBytes
        Task(executorPreference: large ? nil : EventLoopTaskExecutor.cached(&taskExecutor, for: eventLoop)) {
            let answered: JSONAnswer
            switch finished {
            case .success(let json): answered = await ingest.ingest(json, limits: framing.limits, context: client)
            case .failure(let refusal): answered = ingest.rejected(refusal)
            }
            guard answers.post(answered, on: stream) else { return }
            eventLoop.execute {
                let (handler, context) = bound.value
                handler.deliver(handler.answers.take(), context: context)
            }
        }
    }

    /// Sends the answers the commits finished since the last delivery, then flushes once: the
    /// answers of one group commit leave in one write (one TLS record up to 16 KiB) rather than
    /// one each.
    private func deliver(_ finished: [(stream: HTTP2StreamID, answer: JSONAnswer)], context: ChannelHandlerContext) {
        for (stream, answer) in finished {
            // A stream the client reset meanwhile is gone: its answer has nowhere to go.
            guard streams[stream]?.phase == .committing else { continue }
            send(answer, on: stream, context: context)
        }
        flushIfPending(context)
    }

    private func send(_ answer: JSONAnswer, on stream: HTTP2StreamID, context: ChannelHandlerContext) {
        if streams[stream]?.phase == .committing { streams[stream]!.phase = .answered }
        front.sent(answer)
        let headers = HTTP2Frame(streamID: stream, payload: .headers(.init(headers: answer.h2Head(date: front.date()))))
        context.write(wrapOutboundOut(headers), promise: nil)
        context.write(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .data(.init(data: .byteBuffer(answer.body), endStream: true)))),
                      promise: nil)
        flushPending = true
    }

    private func flushIfPending(_ context: ChannelHandlerContext) {
        guard flushPending else { return }
        flushPending = false
        context.flush()
    }

    /// Resets the streams whose body has not ended by their deadline; again while any are taken.
    private func scheduleSweep(context: ChannelHandlerContext) {
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        sweep = context.eventLoop.scheduleTask(in: bodyTimeout) {
            let (handler, context) = bound.value
            handler.sweep = nil
            let now = NIODeadline.now()
            var reset = false
            for (stream, taken) in handler.streams where taken.deadline <= now {
                switch taken.phase {
                case .reading, .refused:
                    context.write(handler.wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .rstStream(.cancel))), promise: nil)
                    reset = true
                case .committing, .answered:
                    // The commit answers in its own time (the writer's queue is bounded); the answer's
                    // DATA waiting for the client's window is a stream the client holds open.
                    if taken.phase == .answered {
                        context.write(handler.wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .rstStream(.cancel))), promise: nil)
                        reset = true
                    }
                }
            }
            if reset { context.flush() }
            if !handler.streams.isEmpty { handler.scheduleSweep(context: context) }
        }
    }
}

extension HTTP2BatchHandler {
    /// The answers finished off the event loop for one connection, waiting to be sent from it.
    /// A group commit resumes its batches' tasks together; each task posts its answer here, and
    /// only the first since the last delivery asks the event loop to deliver (one task on the
    /// loop, one flush), so the answers of a commit that reach it in a burst are sent together:
    /// one TLS record and one `write` for all of them, where each answer's own promise cost its
    /// own hop to the loop, flush, record and `write`. Any thread may post (whichever resumes the
    /// commit's continuation).
    final class Answers: Sendable {
        private let state = Mutex<(finished: [(stream: HTTP2StreamID, answer: JSONAnswer)], delivering: Bool)>(([], false))

        /// Adds a finished answer; true when the caller must ask the event loop to deliver (no
        /// delivery was pending), false when a delivery already asked for will send it.
        func post(_ answer: JSONAnswer, on stream: HTTP2StreamID) -> Bool {
            state.withLock { state in
                state.finished.append((stream, answer))
                if state.delivering { return false }
                state.delivering = true
                return true
            }
        }

        /// The answers posted and not taken yet.
        var count: Int { state.withLock { $0.finished.count } }

        /// The answers posted so far (on the event loop, delivering them): a later post asks again.
        func take() -> [(stream: HTTP2StreamID, answer: JSONAnswer)] {
            state.withLock { state in
                state.delivering = false
                let finished = state.finished
                state.finished = []
                return finished
            }
        }
    }
}
