import HTTPTypes
import Logging
import Prometheus
import NIOCore
import NIOHTTPTypes

/// What the batch path needs, built with the app's channels (`KBTDApp.requestHandlers`): the route's rules
/// and its two middlewares' checks (the same values the router uses), where the client is, and the
/// counters.
struct BatchPath: Sendable {
    let ingest: IngestRoute
    let rateLimit: RateLimitMiddleware
    let auth: IngestAuthMiddleware
    let clients: ClientAddressResolver
    let settings: SettingsBox
    let metrics: ServerMetrics
    let dates: HTTPDate
    let logger: Logger
    /// `kbtd_fast_batches_total` for HTTP/1.1 connections and for HTTP/2 streams.
    let fastHTTP1: Counter
    let fastHTTP2: Counter

    init(app: KBTDApp, clients: ClientAddressResolver) {
        ingest = app.ingest
        rateLimit = app.rateLimit
        auth = app.ingestAuth
        self.clients = clients
        settings = app.settings
        metrics = app.metrics
        dates = app.answers.dates
        logger = app.logger
        fastHTTP1 = app.metrics.fastBatches(protocol: FastAnswerProtocol.http1.rawValue)
        fastHTTP2 = app.metrics.fastBatches(protocol: FastAnswerProtocol.h2.rawValue)
    }

    /// Whether the batch path takes `head`: `POST /v1/batches` with no query, no `Connection`
    /// header and no `Expect` but `100-continue`, while the debug log does not record requests (the
    /// router's request log does).
    func takes(_ head: HTTPRequest) -> Bool {
        head.method == .post && head.path == "/v1/batches" && head.headerFields[.connection] == nil
            && (head.headerFields[.expect] == nil || Self.expectsContinue(head)) && logger.logLevel > .debug
    }

    /// Whether the client waits for `100 Continue` before it sends the body (RFC 9110, 10.1.1).
    static func expectsContinue(_ head: HTTPRequest) -> Bool {
        let values = head.headerFields[values: .expect]
        return values.count == 1 && values[0].lowercased().filter { $0 != " " && $0 != "\t" } == "100-continue"
    }

    /// The request context the listener's responder would build for this request (`KBTDApp.channels`).
    func context(channel: any Channel, headers: HTTPFields) -> KBTDRequestContext {
        KBTDRequestContext(source: KBTDRequestSource(logger: logger,
                                                     remoteAddress: clients.clientAddress(channel: channel, headers: headers)))
    }

    /// Counts an answer as `MetricsMiddleware` would, and in `kbtd_fast_batches_total{protocol}`.
    func count(_ answer: JSONAnswer, on fast: FastAnswerProtocol) {
        metrics.request(route: "/v1/batches", status: answer.status.code)
        (fast == .h2 ? fastHTTP2 : fastHTTP1).increment()
    }
}

/// The batch path: on an HTTP/1.1 connection (or an h2 stream), a `POST /v1/batches` is taken
/// here, at the level of HTTP parts after NIO's decoder, and answered without Hummingbird's router,
/// `Request`, async body sequence and middleware chain, by the same rules (`BatchPath`): the rate
/// limit and the token (`RateLimitMiddleware.refusal`, `IngestAuthMiddleware.refusal`), the headers,
/// the wire cap and the body budget as the body arrives and the inflating once it is whole (`BatchBody`), then the intake and the commit
/// (`IngestRoute.ingest`) in a task whose executor is the connection's event loop
/// (`EventLoopTaskExecutor`: no cooperative-pool thread, one wakeup of the loop when the commit
/// completes); the answer (`JSONAnswer`, the router's bytes with `Date`) is written back in the
/// turn the task resumes in (an h2 stream taken by `HTTP2BatchHandler` the same way). A refusal made before the body has ended is sent
/// at once and the rest of the body dropped, as the router sends it and drains the body.
///
/// Order and backpressure: a batch is taken only while no request passed on is unanswered; while
/// its commit runs, request parts decoded meanwhile wait here, passed on (or taken) once the answer
/// is written, and so does the client's half-closure (`ChannelEvent.inputClosed`). Reading goes on
/// while nothing waits (a client waiting for its answer sends nothing: holding the read would cost
/// two `epoll_ctl` calls a batch, NIO dropping and restoring its interest in the socket); once parts
/// wait, a `read` waits here until the answer, so what waits is at most the read that ended the
/// batch and one more. A graceful shutdown (`ChannelShouldQuiesceEvent`) waits for the answer too,
/// then reaches Hummingbird's connection-state handler, which closes the idle connection.
///
/// Everything else passes on to `CachedAnswerHandler` and the router: other paths and methods, a
/// query, `Connection` or `Expect`, and every request while the debug log records requests.
final class BatchIngestHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum State {
        case idle
        /// A batch taken here, its body arriving.
        case reading(BatchBody, KBTDRequestContext, ServerSettings.Limits)
        /// Answered before its body ended (a refusal): the rest of the body is dropped.
        case draining
        /// The whole body is in; the intake and the commit run in a task on the event loop.
        case committing
    }

    private let path: BatchPath
    private let fast: FastAnswerProtocol
    private var state = State.idle
    /// Requests passed on whose response has not ended yet.
    private var unanswered = 0
    /// Parts read while a batch commits, handled once it is answered.
    private var waiting = CircularBuffer<NIOAny>()
    /// A `read` asked for while a batch commits and parts wait.
    private var readWaiting = false
    /// The client's half-closure, come while a batch commits: passed on after the parts before it.
    private var inputClosed: Any?
    /// A graceful shutdown that came while a batch was taken here.
    private var quiesce: Any?
    /// The event loop the batches' tasks run on (`EventLoopTaskExecutor.cached`).
    private var taskExecutor: EventLoopTaskExecutor?

    init(_ path: BatchPath, protocol fast: FastAnswerProtocol = .http1) {
        self.path = path
        self.fast = fast
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .committing = state {
            waiting.append(data)
            return
        }
        handle(data, context: context)
    }

    private func handle(_ data: NIOAny, context: ChannelHandlerContext) {
        let part = unwrapInboundIn(data)
        switch (state, part) {
        case (.idle, .head(let head)):
            if unanswered == 0, path.takes(head) {
                take(head, context: context)
            } else {
                unanswered += 1
                context.fireChannelRead(data)
            }
        case (.idle, _):
            context.fireChannelRead(data)
        case (.reading(let body, _, _), .body(let chunk)):
            do {
                try body.feed(chunk)
            } catch {
                state = .draining
                send(path.ingest.rejected(error), context: context)
            }
        case (.reading(let body, let client, let limits), .end):
            let json: BatchJSON
            do {
                json = try body.finish()
            } catch {
                state = .idle
                send(path.ingest.rejected(error), context: context)
                resume(context: context)
                return
            }
            state = .committing
            commit(json, limits: limits, client: client, context: context)
        case (.draining, .end):
            state = .idle
            resume(context: context)
        case (.reading, .head), (.draining, _), (.committing, _):
            // A head inside a request's body cannot come from the decoder; the rest of a refused body is dropped.
            break
        }
    }

    /// The checks the router's middlewares make, in their order, then the body's headers; a refusal is sent at once.
    private func take(_ head: HTTPRequest, context: ChannelHandlerContext) {
        let client = path.context(channel: context.channel, headers: head.headerFields)
        if let refusal = path.rateLimit.refusal(client) ?? path.auth.refusal(head.headerFields) {
            state = .draining
            send(refusal, context: context)
            return
        }
        let limits = path.settings.current.limits
        do {
            state = .reading(path.ingest.body(try BatchBody.Framing(head.headerFields, limits: limits), context: client), client, limits)
            // The head passed every check the body does not decide: the client may send it.
            if BatchPath.expectsContinue(head) {
                context.writeAndFlush(wrapOutboundOut(.head(HTTPResponse(status: .continue))), promise: nil)
            }
        } catch {
            state = .draining
            send(path.ingest.rejected(error), context: context)
        }
    }

    /// JSON up to this size is counted on the event loop (a 100-sample batch is about 20 KB, some
    /// 40 µs of intake); a larger body (up to `max_samples_per_batch`, milliseconds of intake) is
    /// counted on the cooperative pool, so the loop's other connections (height answers) do not wait.
    static let onLoopJSONBytes = 64 << 10

    /// Runs the intake and the commit in a task on the connection's event loop (`EventLoopTaskExecutor`):
    /// no cooperative-pool thread takes part, and the commit's completion, from whichever thread,
    /// resumes the task on the loop, which completes the promise and writes the answer in that turn.
    /// JSON over `onLoopJSONBytes` runs in a task on the pool instead; its answer comes back the same way.
    private func commit(_ json: BatchJSON, limits: ServerSettings.Limits, client: KBTDRequestContext, context: ChannelHandlerContext) {
        let ingest = path.ingest
        let promise = context.eventLoop.makePromise(of: JSONAnswer.self)
        if json.bytes.count <= Self.onLoopJSONBytes {
            Task(executorPreference: EventLoopTaskExecutor.cached(&taskExecutor, for: context.eventLoop)) {
                promise.succeed(await ingest.ingest(json, limits: limits, context: client))
            }
        } else {
            promise.completeWithTask { await ingest.ingest(json, limits: limits, context: client) }
        }
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        promise.futureResult.whenSuccess { answer in
            let (handler, context) = bound.value
            handler.state = .idle
            handler.send(answer, context: context)
            handler.resume(context: context)
        }
    }

    private func send(_ answer: JSONAnswer, context: ChannelHandlerContext) {
        path.count(answer, on: fast)
        context.write(wrapOutboundOut(.head(answer.head(date: path.dates.now()))), promise: nil)
        context.write(wrapOutboundOut(.body(answer.body)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    /// Once a batch taken here is answered: the parts that waited, then a waiting shutdown or read.
    private func resume(context: ChannelHandlerContext) {
        if let event = quiesce {
            // The connection closes after this answer, as after the router's: what was read after it is dropped.
            quiesce = nil
            inputClosed = nil
            waiting.removeAll()
            context.fireUserInboundEventTriggered(event)
            return
        }
        var replayed = false
        while let data = waiting.popFirst() {
            handle(data, context: context)
            replayed = true
            if case .committing = state { break }
        }
        // The handlers after this one (Hummingbird's async channel) take what was read at the read's end.
        if replayed { context.fireChannelReadComplete() }
        if isCommitting { return }
        if let event = inputClosed {
            inputClosed = nil
            context.fireUserInboundEventTriggered(event)
        }
        // A batch replayed above may still await the rest of its body: that needs the read too.
        if readWaiting {
            readWaiting = false
            context.read()
        }
    }

    func read(context: ChannelHandlerContext) {
        if isCommitting, !waiting.isEmpty {
            readWaiting = true
            return
        }
        context.read()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data), unanswered > 0 { unanswered -= 1 }
        context.write(data, promise: promise)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ChannelShouldQuiesceEvent, !isIdle {
            quiesce = event
            return
        }
        if isCommitting, case .inputClosed? = event as? ChannelEvent {
            inputClosed = event
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        waiting.removeAll()
        inputClosed = nil
        context.fireChannelInactive()
    }

    private var isIdle: Bool {
        if case .idle = state { return true }
        return false
    }

    private var isCommitting: Bool {
        if case .committing = state { return true }
        return false
    }
}
