import ArgumentParser
import Dispatch
import Foundation
import KBTDCore
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// `kbtd-bench session`: the phone's real session, many phones at once (Benchmarks/session). Each
/// phone opens a fresh TLS 1.3 connection (no resumption), negotiates h2 by ALPN, asks one
/// `GET` for its heights, posts one gzip batch of 10-20 samples, and closes; `--phones` sessions are
/// open at every moment until `--sessions` have ended. A session's latency runs from the TCP connect
/// to the batch's answer. `--format victoriametrics` posts the same samples as VictoriaMetrics
/// `/api/v1/import` JSON lines (gzip), for nginx proxying them to VictoriaMetrics.
///
///     kbtd-bench session --port 8443 --ca ca.pem --phones 300 --sessions 3000
struct Session: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Fresh TLS 1.3 + h2 per phone: GET its heights, POST one gzip batch, close; sessions/s and p50/p99.")

    @Option var port: Int
    @Option(help: "The CA certificate (PEM) the server's certificate must chain to.") var ca: String
    @Option(help: "Sessions open at once.") var phones = 300
    @Option(help: "Sessions in all.") var sessions = 3000
    @Option(help: "The GET's target.") var query = "/v1/heights?model=iPhone17,1"
    @Option(help: "The POST's target.") var post = "/v1/batches"
    @Option(help: "kbtd: batch JSON; victoriametrics: the same samples as /api/v1/import JSON lines. Both gzip.")
    var format: Bodies.Format = .kbtd
    @Option(help: "The status every POST must get (kbtd 202, VictoriaMetrics 204).") var accepted = 202
    @Option(help: "Event-loop threads of the client.") var threads = 1

    func run() throws {
        let bodies = SessionBodies(format: format, count: sessions)
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .file(ca)
        configuration.certificateVerification = .noHostnameVerification
        configuration.minimumTLSVersion = .tlsv13
        configuration.applicationProtocols = ["h2"]
        let tls = try NIOSSLContext(configuration: configuration)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        defer { try? group.syncShutdownGracefully() }
        let run = SessionRun(total: sessions)
        let (port, query, post) = (self.port, self.query, self.post)
        let cpuBefore = ResourceUse.now()
        let start = ContinuousClock.now
        // Starts session `index` and, when it ends, the next one not started yet.
        @Sendable func begin(_ index: Int) {
            let began = ContinuousClock.now
            let phone = Phone(query: query, post: post, body: bodies.body(index), authority: "127.0.0.1:\(port)")
            let connected = ClientBootstrap(group: group)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let pipeline = channel.pipeline.syncOperations
                        try pipeline.addHandler(NIOSSLClientHandler(context: tls, serverHostname: nil))
                        try pipeline.addHandler(NIOHTTP2Handler(mode: .client, initialSettings: nioDefaultSettings))
                        try pipeline.addHandler(phone)
                    }
                }
                .connect(host: "127.0.0.1", port: port)
            connected.whenFailure { error in
                run.end(.init(get: 0, post: 0, milliseconds: 0, error: "connect: \(error)"))
                if let next = run.next() { begin(next) }
            }
            connected.whenSuccess { channel in
                channel.closeFuture.whenComplete { _ in
                    var outcome = phone.outcome
                    outcome.milliseconds = (ContinuousClock.now - began) / .milliseconds(1)
                    run.end(outcome)
                    if let next = run.next() { begin(next) }
                }
            }
        }
        for _ in 0..<min(phones, sessions) {
            if let index = run.next() { begin(index) }
        }
        run.done.wait()
        let elapsed = (ContinuousClock.now - start) / .seconds(1)
        let cpu = ResourceUse.now() - cpuBefore
        let tally = run.tally.withLock { $0 }
        let sorted = tally.latencies.sorted()
        print(String(format: "session: %d sessions, %d at once, %.2f s = %.1f sessions/s; p50 %.2f ms, p99 %.2f ms; client CPU %.2f s",
                     sessions, phones, elapsed, Double(tally.good) / elapsed, percentile(sorted, 0.5), percentile(sorted, 0.99), cpu.total))
        print("session: GET statuses \(tally.gets.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " "));"
              + " POST statuses \(tally.posts.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " "));"
              + " failures \(tally.failures)\(tally.firstError.map { " (first: \($0))" } ?? "")")
        if tally.good != sessions || tally.posts[accepted] != sessions { throw ExitCode(1) }
    }
}

/// One gzip body per session, made before the run (distinct batch ids: no session is a duplicate).
struct SessionBodies: Sendable {
    private let bodies: [[UInt8]]

    init(format: Bodies.Format, count: Int) {
        var workload = Workload(seed: UInt64.random(in: 0...UInt64.max))
        let now = Date().timeIntervalSince1970
        let rules = FieldRules()
        bodies = (0..<count).map { _ in
            let json = workload.batchJSON(count: 10 + Int(workload.next() % 11), now: now)
            switch format {
            case .kbtd: return Workload.gzip(json)
            case .victoriametrics: return Workload.gzip(Bodies.importLines(try! BatchIntake.validate(json: json, now: now, rules: rules)))
            }
        }
    }

    func body(_ index: Int) -> [UInt8] { bodies[index] }
}

/// The sessions of a run: which starts next, and what the ended ones got.
final class SessionRun: Sendable {
    struct Outcome {
        var get = 0
        var post = 0
        var milliseconds = 0.0
        var error: String?
    }

    struct Tally {
        var latencies: [Double] = []
        var gets: [Int: Int] = [:]
        var posts: [Int: Int] = [:]
        var failures = 0
        var good = 0
        var firstError: String?
    }

    let tally = Mutex(Tally())
    let done = DispatchGroup()
    private let total: Int
    private let started = Atomic<Int>(0)

    init(total: Int) {
        self.total = total
        for _ in 0..<total { done.enter() }
    }

    func next() -> Int? {
        let index = started.wrappingAdd(1, ordering: .relaxed).oldValue
        return index < total ? index : nil
    }

    func end(_ outcome: Outcome) {
        tally.withLock { tally in
            tally.gets[outcome.get, default: 0] += 1
            tally.posts[outcome.post, default: 0] += 1
            if let error = outcome.error {
                tally.failures += 1
                if tally.firstError == nil { tally.firstError = error }
            } else if outcome.get == 200 {
                tally.good += 1
                tally.latencies.append(outcome.milliseconds)
            }
        }
        done.leave()
    }
}

/// One phone's connection in frame mode: the GET on stream 1, once it is answered the POST on
/// stream 3, once that is answered the connection is closed.
final class Phone: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private let query: String, post: String, body: [UInt8], authority: String
    private(set) var outcome = SessionRun.Outcome()
    private var status = 0

    init(query: String, post: String, body: [UInt8], authority: String) {
        (self.query, self.post, self.body, self.authority) = (query, post, body, authority)
    }

    func channelActive(context: ChannelHandlerContext) {
        context.fireChannelActive()
        let fields: [(String, String)] = [(":method", "GET"), (":scheme", "https"), (":authority", authority), (":path", query),
                                          ("accept", "application/json"), ("user-agent", "kbtd-bench")]
        context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: 1, payload: .headers(.init(headers: HPACKHeaders(fields), endStream: true)))),
                              promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if outcome.post == 0, outcome.error == nil { outcome.error = "closed before the POST's answer" }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if outcome.error == nil, outcome.post == 0 { outcome.error = "\(error)" }
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let ended: Bool
        switch frame.payload {
        case .headers(let headers):
            if let code = headers.headers.first(name: ":status").flatMap({ Int($0) }), code >= 200 { status = code }
            ended = headers.endStream
        case .data(let payload):
            ended = payload.endStream
        case .rstStream(let code):
            outcome.error = "stream \(frame.streamID) reset (\(code))"
            context.close(promise: nil)
            return
        default:
            return
        }
        guard ended else { return }
        if frame.streamID == 1 {
            outcome.get = status
            status = 0
            var buffer = context.channel.allocator.buffer(capacity: body.count)
            buffer.writeBytes(body)
            let fields: [(String, String)] = [(":method", "POST"), (":scheme", "https"), (":authority", authority), (":path", post),
                                              ("content-type", "application/json"), ("content-encoding", "gzip"),
                                              ("content-length", String(body.count)), ("user-agent", "kbtd-bench")]
            context.write(wrapOutboundOut(HTTP2Frame(streamID: 3, payload: .headers(.init(headers: HPACKHeaders(fields))))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: 3, payload: .data(.init(data: .byteBuffer(buffer), endStream: true)))),
                                  promise: nil)
        } else if frame.streamID == 3 {
            outcome.post = status
            context.close(promise: nil)
        }
    }
}
