import HTTPTypes
import NIOCore
import NIOHPACK
import NIOHTTP2

/// The front of an h2 connection's frames (`HTTP2Connection`: after `NIOHTTP2Handler` and its connection
/// manager, before the stream multiplexer). The two requests of a phone's session are served here from
/// their frames, with no stream channel, codec or task, by the rules `Front` writes once; every other
/// stream goes on to the multiplexer, whose stream channels the router serves.
///
/// - A cached height: a new stream whose HEADERS frame is a complete `GET` (END_STREAM, no body) that
///   `Front.heightAnswer` answers gets a HEADERS and a DATA frame (a 304: one HEADERS frame), END_STREAM
///   on the last: the router's fields and bytes, and `Date`.
/// - A batch: a `POST /v1/batches` that `Front.takesBatch` gets the rate limit and the token when its
///   HEADERS frame arrives (`Front.admitBatch`), `BatchBody.Framing` for its headers (a refusal is answered
///   at once and the rest of the body dropped), the wire cap and the body budget as DATA frames arrive
///   (each frame's bytes fed to the stream's `BatchBody`, as the router feeds its body); at END_STREAM
///   the body is inflated, counted and committed in a task on the connection's event loop
///   (`EventLoopTaskExecutor`), or on the cooperative pool for JSON over `onLoopJSONBytes`, and the
///   `JSONAnswer` goes back as a HEADERS and a DATA frame. Answers finished while the loop is busy go
///   back together, with one flush (`Answers`).
///
/// What it writes goes through `NIOHTTP2Handler`: HPACK, flow control (a DATA frame the window does not
/// admit waits there), stream states, `SETTINGS_MAX_CONCURRENT_STREAMS` and the DoS limits (rapid reset,
/// CONTINUATION floods, HPACK bombs, glitches) stay swift-nio-http2's, which checked every frame first.
/// The later frames and events of a stream served here (window updates, its close) stop here until
/// swift-nio-http2 reports it closed: the multiplexer has no channel for it and would call a frame an error.
///
/// Flow control: `NIOHTTP2Handler` in frame mode enforces the windows but opens none itself; a stream
/// channel opens its stream's as it reads. A batch taken here has no channel, so this sends its stream's
/// WINDOW_UPDATE as it consumes DATA (every `windowStep` bytes), and keeps the connection's window at
/// `connectionWindow` (every batch stream's first 64 KiB at once) rather than the 65,535 bytes the
/// multiplexer would keep (its one `targetWindowSize` would also set every stream's): with 16 batches in
/// flight, a 64 KiB connection window cost a WINDOW_UPDATE (its own flush, TLS record and write) every
/// 32 KiB. Streams keep 65,535-byte windows and at most `maxStreams` batches are taken here at once (more
/// go to the multiplexer), so a connection buffers at most `maxStreams` x `max_compressed_bytes` here.
///
/// Deadlines are `RequestDeadlines`', on one timer: a batch's body must end within `body` of its HEADERS,
/// and an answer whose DATA waits for the client's window may wait `idle`; then the stream is reset
/// (RST_STREAM CANCEL), as a stream channel's deadline would close it, so a client cannot hold streams,
/// keep the connection from idling out or hold up a graceful shutdown.
///
/// WINDOW_UPDATE frames past `WindowUpdateAllowance` end the connection with GOAWAY `ENHANCE_YOUR_CALM`.
final class HTTP2FrameFront: ChannelDuplexHandler, RemovableChannelHandler, DeadlineKeeper {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// Batch streams one connection may have here at once.
    static let maxStreams = 16
    /// Bytes of a batch's body consumed before its stream's window is opened again (half the initial window).
    static let windowStep = 32_768
    /// The connection's receive window kept open here (RFC 9113 starts it at 65,535).
    static let connectionWindow = maxStreams * 65_536
    /// JSON up to this size is counted on the event loop (a 100-sample batch is about 20 KB, some 40 µs of
    /// intake); a larger body (up to `max_samples_per_batch`, milliseconds of intake) is counted on the
    /// cooperative pool, so the loop's other connections (height answers) do not wait.
    static let onLoopJSONBytes = 64 << 10

    /// What a stream served here waits for.
    private enum Phase {
        /// A batch's body, fed to its `BatchBody` as it arrives.
        case reading(BatchBody.Framing, BatchBody)
        /// A batch's commit.
        case committing
        /// swift-nio-http2 to close it: the answer is written (its DATA may wait for the window), or a
        /// batch's refusal is and the rest of its body is dropped.
        case answered
    }

    /// A stream served here, until swift-nio-http2 reports it closed.
    private struct Served {
        var phase: Phase
        /// The batch's client; nil for a height answer.
        var client: KBTDRequestContext?
        /// Bytes of the batch's body consumed since its stream's window was last opened.
        var unacknowledged = 0
        var deadline: NIODeadline?
    }

    private let front: Front
    private let clients: ClientAddressResolver
    private let deadlines: RequestDeadlines
    /// The streams served here and not closed yet, and how many of them are batches.
    private var streams: [HTTP2StreamID: Served] = [:]
    private var batches = 0
    /// The highest stream a HEADERS frame has opened: a HEADERS frame on a stream at or below it is not a request.
    private var lastStream = HTTP2StreamID(0)
    /// Frames written during this read or delivery, flushed at its end (one flush for many streams).
    private var flushPending = false
    /// A stream's deadline moved since the timer was last armed.
    private var deadlinesMoved = false
    private let timer = DeadlineTimer()
    /// The connection's window has been raised to `connectionWindow`.
    private var windowRaised = false
    /// WINDOW_UPDATE frames received against DATA frames written; `flooded` once past the allowance.
    private var windowUpdates: WindowUpdateAllowance
    private var flooded = false
    /// The answers the commits' tasks have finished and the event loop has not sent yet.
    let answers = Answers()
    /// The event loop as the batches' tasks' executor, made at the first batch.
    private var taskExecutor: EventLoopTaskExecutor?
    /// JSON up to this size is counted on the loop (a test sets 0: every batch on the pool, to hold the
    /// loop while the commits finish).
    var onLoopJSONBytes = HTTP2FrameFront.onLoopJSONBytes

    init(_ front: Front, clients: ClientAddressResolver, deadlines: RequestDeadlines,
         windowUpdateAllowance: Int = WindowUpdateAllowance.defaultAllowance) {
        self.front = front
        self.clients = clients
        self.deadlines = deadlines
        self.windowUpdates = WindowUpdateAllowance(allowance: windowUpdateAllowance)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        if !windowRaised {
            // The client's first frame (its SETTINGS) has arrived: the connection is open both ways.
            windowRaised = true
            updateWindow(of: .rootStream, by: Self.connectionWindow - 65_535, context: context)
        }
        if case .windowUpdate = frame.payload, !admitWindowUpdate(context) { return }
        if !streams.isEmpty, streams[frame.streamID] != nil {
            receive(frame, context: context)
            return
        }
        if case .headers(let headers) = frame.payload, frame.streamID > lastStream {
            lastStream = frame.streamID
            if headers.endStream, let answer = heightAnswer(headers.headers) {
                front.sent(answer)
                var block = answer.h2Head
                block.add(name: "date", value: front.date())
                streams[frame.streamID] = Served(phase: .answered)
                send(block, answer.body, on: frame.streamID, context: context)
                return
            }
            if !headers.endStream, batches < Self.maxStreams, let request = Self.request(headers.headers), front.takesBatch(request) {
                take(request, on: frame.streamID, context: context)
                return
            }
        }
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flushAndArm(context)
        context.fireChannelReadComplete()
    }

    /// The events of a stream served here (its creation, window changes, its close) stop here, as its
    /// frames do. The connection's window changes too: its window is this handler's to keep.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case let window as NIOHTTP2WindowUpdatedEvent:
            if window.streamID == .rootStream {
                if windowRaised, let open = window.inboundWindowSize, open <= Self.connectionWindow / 2 {
                    updateWindow(of: .rootStream, by: Self.connectionWindow - open, context: context)
                }
                return
            }
            if !streams.isEmpty, streams[window.streamID] != nil { return }
        case let created as NIOHTTP2StreamCreatedEvent:
            if !streams.isEmpty, streams[created.streamID] != nil { return }
        case let closed as StreamClosedEvent:
            if !streams.isEmpty, let served = streams.removeValue(forKey: closed.streamID) {
                if served.client != nil { batches -= 1 }
                return
            }
        default:
            break
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// Counts the DATA frames the multiplexer's streams write (against the WINDOW_UPDATE allowance).
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .data = unwrapOutboundIn(data).payload { countData(context) }
        context.write(data, promise: promise)
    }

    /// Resets the streams whose deadline has passed, and arms the timer for the next.
    func deadlinesDue(context: ChannelHandlerContext) {
        let now = context.eventLoop.now
        var reset = false
        for (stream, served) in streams {
            guard let deadline = served.deadline, deadline <= now else { continue }
            streams[stream]!.deadline = nil
            context.write(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .rstStream(.cancel))), promise: nil)
            reset = true
        }
        if reset { context.flush() }
        deadlinesMoved = true
        flushAndArm(context)
    }

    // MARK: Heights

    /// The answer to a request's header block if the front lets this path answer it; nil passes it on.
    /// swift-nio-http2 has validated the block (pseudo-header fields first, once each, lower-case names).
    private func heightAnswer(_ block: HPACKHeaders) -> RenderedAnswer? {
        var method: String?, path: String?, ifNoneMatch: String?, repeated = false, framed = false
        for (name, value, _) in block {
            switch name {
            case ":method": method = value
            case ":path": path = value
            case "if-none-match":
                repeated = repeated || ifNoneMatch != nil
                ifNoneMatch = value
            case "content-length", "transfer-encoding": framed = true
            default: continue
            }
        }
        return front.heightAnswer(method: method, target: path, ifNoneMatch: ifNoneMatch, repeatedIfNoneMatch: repeated,
                                  hasBody: framed)
    }

    // MARK: Batches

    /// The `POST` a header block opens, or nil when it is not one this path reads.
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
        batches += 1
        streams[stream] = Served(phase: .answered, client: client)
        move(stream, after: .head, context: context)
        if let refusal = front.admitBatch(client, headers: request.headerFields) {
            answer(refusal, on: stream, context: context)
            return
        }
        do {
            let (framing, body) = try front.batchBody(request.headerFields, client: client)
            streams[stream]!.phase = .reading(framing, body)
            if Front.expectsContinue(request) {
                context.write(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: [":status": "100"])))),
                              promise: nil)
                flushPending = true
            }
        } catch {
            answer(front.ingest.rejected(error), on: stream, context: context)
        }
    }

    private func receive(_ frame: HTTP2Frame, context: ChannelHandlerContext) {
        let stream = frame.streamID
        let ended: Bool
        switch frame.payload {
        case .data(let payload):
            guard case .byteBuffer(let bytes) = payload.data else { return }
            streams[stream]!.unacknowledged += bytes.readableBytes + (payload.paddingBytes ?? 0)
            if case .reading(_, let body) = streams[stream]!.phase, bytes.readableBytes > 0 {
                feed(bytes, to: body, of: stream, context: context)
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
        guard ended, case .reading(let framing, let body) = streams[stream]?.phase else { return }
        streams[stream]!.phase = .committing
        move(stream, after: .bodyEnded, context: context)
        commit(body, framing, client: streams[stream]!.client!, on: stream, context: context)
    }

    /// Feeds a DATA frame's bytes to the stream's body, which copies them into the bytes it holds (under
    /// the client's share of the body budget) and inflates at the end, so no slice of the frame is held. A
    /// slice shares the storage of the whole decrypted read it came from (NIOSSL's, up to hundreds of KiB),
    /// and swift-nio-http2's frame decoder appends the next read to the rest of that storage: while a slice
    /// was held, every append copied the whole storage first (copy-on-write) into a fresh allocation,
    /// faulted in page by page. Feeding as frames arrive is one copy of the body's bytes; keeping them in a
    /// buffer of the stream's own and feeding them at the end was two. A refusal (a cap passed, a deflate
    /// stream that does not inflate) is answered at once and the rest of the body dropped, as on HTTP/1.1.
    private func feed(_ bytes: ByteBuffer, to body: BatchBody, of stream: HTTP2StreamID, context: ChannelHandlerContext) {
        do {
            try body.feed(bytes)
        } catch {
            answer(front.ingest.rejected(error), on: stream, context: context)
        }
    }

    /// Finishes the body on the event loop (a gzip body inflated, as on HTTP/1.1), then counts and commits
    /// it in a task on the loop (`EventLoopTaskExecutor`: no cooperative-pool thread) or, for JSON over
    /// `onLoopJSONBytes`, on the pool, so the loop's other streams and connections do not wait for a large
    /// batch's intake. The answer comes back on the loop through `answers`, with the others finished
    /// meanwhile (see `Answers`).
    private func commit(_ body: BatchBody, _ framing: BatchBody.Framing, client: KBTDRequestContext, on stream: HTTP2StreamID,
                        context: ChannelHandlerContext) {
        let ingest = front.ingest, answers = self.answers, eventLoop = context.eventLoop
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: eventLoop)
        let finished: Result<BatchJSON, JSONRefusal>
        do { finished = .success(try body.finish()) } catch { finished = .failure(error) }
        let large = ((try? finished.get())?.bytes.count ?? 0) > onLoopJSONBytes
        let executor = taskExecutor ?? EventLoopTaskExecutor(eventLoop)
        taskExecutor = executor
        Task(executorPreference: large ? nil : executor) {
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

    /// Sends the answers the commits finished since the last delivery, then flushes once: the answers of
    /// one group commit leave in one write (one TLS record up to 16 KiB) rather than one each.
    private func deliver(_ finished: [(stream: HTTP2StreamID, answer: JSONAnswer)], context: ChannelHandlerContext) {
        for (stream, answer) in finished {
            // A stream the client reset meanwhile is gone: its answer has nowhere to go.
            guard case .committing? = streams[stream]?.phase else { continue }
            self.answer(answer, on: stream, context: context)
        }
        flushAndArm(context)
    }

    /// Sends a batch's answer (a refusal before its body ended, or the commit's): the rest of its body, if
    /// any, is dropped.
    private func answer(_ answer: JSONAnswer, on stream: HTTP2StreamID, context: ChannelHandlerContext) {
        front.sent(answer)
        streams[stream]!.phase = .answered
        send(answer.h2Head(date: front.date()), answer.body, on: stream, context: context)
    }

    // MARK: Frames, deadlines

    /// Writes an answer's HEADERS and its DATA (nil: none), END_STREAM on the last; its wait for the
    /// client's window starts now (set first: a write that ends the stream removes it at once).
    private func send(_ head: HPACKHeaders, _ body: ByteBuffer?, on stream: HTTP2StreamID, context: ChannelHandlerContext) {
        move(stream, after: .answered, context: context)
        context.write(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: head, endStream: body == nil)))),
                      promise: nil)
        if let body {
            countData(context)
            context.write(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .data(.init(data: .byteBuffer(body), endStream: true)))),
                          promise: nil)
        }
        flushPending = true
    }

    private func updateWindow(of stream: HTTP2StreamID, by increment: Int, context: ChannelHandlerContext) {
        context.write(wrapOutboundOut(HTTP2Frame(streamID: stream, payload: .windowUpdate(windowSizeIncrement: increment))),
                      promise: nil)
        flushPending = true
    }

    /// Sets the stream's deadline for what follows `moment` (the timer is armed at the next flush).
    private func move(_ stream: HTTP2StreamID, after moment: RequestDeadlines.Moment, context: ChannelHandlerContext) {
        streams[stream]!.deadline = deadlines.deadline(after: moment, now: context.eventLoop.now)
        deadlinesMoved = true
    }

    /// Flushes what this read or delivery wrote; then, as streams closed by it are gone, arms the timer
    /// for the earliest deadline left.
    private func flushAndArm(_ context: ChannelHandlerContext) {
        if flushPending {
            flushPending = false
            context.flush()
        }
        guard deadlinesMoved else { return }
        deadlinesMoved = false
        if let next = streams.values.lazy.compactMap(\.deadline).min() { timer.arm(next, self, context) }
    }

    /// Counts a WINDOW_UPDATE against the allowance; past it, GOAWAY `ENHANCE_YOUR_CALM` and the connection closes.
    private func admitWindowUpdate(_ context: ChannelHandlerContext) -> Bool {
        guard !flooded else { return false }
        if windowUpdates.admitUpdate(now: context.eventLoop.now) { return true }
        flooded = true
        let goAway = HTTP2Frame(streamID: .rootStream, payload: .goAway(lastStreamID: .maxID, errorCode: .enhanceYourCalm, opaqueData: nil))
        // Closed at once: frames of the same read that NIOHTTP2Handler has still to parse would otherwise
        // meet a connection that has sent its GOAWAY, and draw a second one (PROTOCOL_ERROR).
        context.writeAndFlush(wrapOutboundOut(goAway), promise: nil)
        context.close(promise: nil)
        return false
    }

    private func countData(_ context: ChannelHandlerContext) {
        windowUpdates.countData(now: context.eventLoop.now)
    }
}
