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

/// `kbtd-bench ingest-over plain|tls-h1|tls-h2`: distinct batches sent by one SwiftNIO client over
/// plain HTTP/1.1, TLS HTTP/1.1 or TLS h2, with the same number of requests in flight on every
/// transport, for a fixed time (Benchmarks/phone `--ingest-only`). One client for the three
/// transports, so that the ratios compare kbtd's transports and not three clients: curl's h2 costs
/// more than half a core on this machine, its HTTP/1.1 a fifth of one. It reports its own CPU
/// (getrusage: user and system) beside the daemon's, so a reader can see the client is not the limit.
///
///     kbtd-bench ingest-over tls-h2 --port 8443 --ca ca.pem --in-flight 16 --connections 1 --seconds 5
struct IngestOver: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest-over",
        abstract: "End-to-end ingest over plain HTTP/1.1, TLS HTTP/1.1 or TLS h2: 202s after commit, batches/s, client CPU.")

    enum Transport: String, ExpressibleByArgument, CaseIterable {
        case plain, tlsH1 = "tls-h1", tlsH2 = "tls-h2"
    }

    enum Encoding: String, ExpressibleByArgument {
        case identity, gzip
    }

    @Argument(help: "plain (HTTP/1.1), tls-h1 (HTTP/1.1 over TLS) or tls-h2 (HTTP/2 over TLS, ALPN h2).") var transport: Transport
    @Option var port: Int
    @Option(help: "The CA certificate (PEM) the server's certificate must chain to (TLS transports).") var ca: String?
    @Option(help: "Requests in flight in all, on every transport (HTTP/1.1: one per connection).") var inFlight = 16
    @Option(help: "h2 only: connections sharing the in-flight requests as streams (1: one phone; more: a fleet).")
    var connections = 1
    @Option(help: "Seconds to send for.") var seconds = 5.0
    @Option(help: "identity: uncompressed JSON (a batch id patched into a few bodies per request); gzip: --batches bodies made beforehand.")
    var encoding: Encoding = .identity
    @Option(help: "gzip only: bodies to make beforehand (the run also stops when they are used up).") var batches = 40_000
    @Option(help: "Event-loop threads of the client.") var threads = 1
    @Option(help: "The daemon's pid, to report its CPU use.") var pid: Int32?

    func validate() throws {
        if transport != .plain, ca == nil { throw ValidationError("--ca is needed for \(transport.rawValue)") }
        if transport == .tlsH2, connections < 1 || inFlight % connections != 0 {
            throw ValidationError("--in-flight (\(inFlight)) must be a multiple of --connections (\(connections))")
        }
    }

    func run() throws {
        let bodies = BenchBodies(encoding: encoding, batches: batches)
        let load = LoadState(deadline: .now + .milliseconds(Int64(seconds * 1000)), bodies: bodies)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        defer { try? group.syncShutdownGracefully() }
        let (port, transport) = (self.port, self.transport)
        let tls: NIOSSLContext? = try (transport == .plain ? nil : ca).map { ca in
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.trustRoots = .file(ca)
            // The benchmark's certificate names 127.0.0.1; the chain to its own CA is still checked.
            configuration.certificateVerification = .noHostnameVerification
            configuration.applicationProtocols = transport == .tlsH2 ? ["h2"] : ["http/1.1"]
            return try NIOSSLContext(configuration: configuration)
        }
        let sockets = transport == .tlsH2 ? connections : inFlight
        let streams = transport == .tlsH2 ? inFlight / connections : 1
        let cpuBefore = ResourceUse.now()
        let daemonBefore = pid.flatMap(processCPUSeconds(pid:))
        let start = ContinuousClock.now
        for _ in 0..<sockets {
            load.reported.enter()
            _ = try ClientBootstrap(group: group)
                .channelOption(.socketOption(.tcp_nodelay), value: 1)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let pipeline = channel.pipeline.syncOperations
                        if let tls { try pipeline.addHandler(NIOSSLClientHandler(context: tls, serverHostname: nil)) }
                        if transport == .tlsH2 {
                            try pipeline.addHandler(NIOHTTP2Handler(mode: .client, initialSettings: nioDefaultSettings))
                            try pipeline.addHandler(HTTP2Sender(load: load, streams: streams, authority: "127.0.0.1:\(port)"))
                        } else {
                            try pipeline.addHandler(HTTP1Sender(load: load))
                        }
                    }
                }
                .connect(host: "127.0.0.1", port: port).wait()
        }
        load.reported.wait()
        let elapsed = (ContinuousClock.now - start) / .seconds(1)
        let cpu = ResourceUse.now() - cpuBefore
        var daemonCPU: Double?
        if let before = daemonBefore, let after = pid.flatMap(processCPUSeconds(pid:)) { daemonCPU = after - before }
        let tally = load.tally.withLock { $0 }
        let sorted = tally.latencies.sorted()
        let accepted = tally.statuses[202] ?? 0
        let shape = transport == .tlsH2 ? "\(sockets) connection(s) x \(streams) streams" : "\(sockets) connections"
        print(String(format: "ingest-over %@: %@, %@ bodies, %.1f s, %d batches acknowledged (202) = %.0f batches/s, %.0f samples/s",
                     transport.rawValue, shape, encoding.rawValue, elapsed, accepted, Double(accepted) / elapsed,
                     Double(accepted * 100) / elapsed))
        print(String(format: "ingest-over %@: ack latency p50 %.2f ms, p99 %.2f ms; statuses %@; failures %d",
                     transport.rawValue, percentile(sorted, 0.5), percentile(sorted, 0.99),
                     tally.statuses.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " "),
                     tally.failures))
        print(String(format: "ingest-over %@: client CPU %.2f s (user %.2f, system %.2f; %.0f%% of one core)%@",
                     transport.rawValue, cpu.total, cpu.user, cpu.system, 100 * cpu.total / elapsed,
                     daemonCPU.map { String(format: ", daemon CPU %.2f s (%.0f%% of one core)", $0, 100 * $0 / elapsed) } ?? ""))
        if tally.failures > 0 || accepted != tally.statuses.values.reduce(0, +) { throw ExitCode(1) }
    }
}

/// The batches a run sends, each with a batch id of its own. Uncompressed: a few bodies made once,
/// each request a copy with a new id written over the old one (no JSON or gzip work per request in
/// the client). gzip: every body made beforehand.
struct BenchBodies: Sendable {
    let encoding: IngestOver.Encoding
    private let templates: [[UInt8]]
    private let idOffsets: [Int]
    /// Run tag: the first half of every id, so that runs against one daemon never repeat an id.
    private let tag = UInt64.random(in: 0...UInt64.max)

    init(encoding: IngestOver.Encoding, batches: Int) {
        self.encoding = encoding
        var workload = Workload(seed: UInt64.random(in: 0...UInt64.max))
        let now = Date().timeIntervalSince1970
        let marker = Array("\"batch_id\":\"".utf8)
        switch encoding {
        case .identity:
            templates = (0..<32).map { _ in workload.batchJSON(now: now) }
            idOffsets = templates.map { body in
                let at = (0...(body.count - marker.count)).first { body[$0..<($0 + marker.count)].elementsEqual(marker) }!
                return at + marker.count
            }
        case .gzip:
            templates = (0..<batches).map { _ in Workload.gzip(workload.batchJSON(now: now)) }
            idOffsets = []
        }
    }

    /// Bodies there are (nil: as many as the run asks for).
    var limit: Int? { encoding == .gzip ? templates.count : nil }

    func length(_ index: Int) -> Int { templates[index % templates.count].count }

    /// Appends body `index` to `buffer`.
    func write(_ index: Int, into buffer: inout ByteBuffer) {
        let template = templates[index % templates.count]
        let start = buffer.writerIndex
        buffer.writeBytes(template)
        guard encoding == .identity else { return }
        // 8-4-4-4-12 lower-case hex: the run's tag, then the request's index.
        let hex = Array(String(format: "%016llx%016llx", tag, UInt64(index)).utf8)
        var id = [UInt8](repeating: UInt8(ascii: "-"), count: 36)
        var from = 0
        for (to, count) in [(0, 8), (9, 4), (14, 4), (19, 4), (24, 12)] {
            for k in 0..<count { id[to + k] = hex[from + k] }
            from += count
        }
        buffer.setBytes(id, at: start + idOffsets[index % templates.count])
    }
}

/// What every connection of a run shares: the next body, the deadline, and the tally.
final class LoadState: Sendable {
    struct Tally {
        var latencies: [Double] = []
        var statuses: [Int: Int] = [:]
        var failures = 0
    }

    let deadline: ContinuousClock.Instant
    let bodies: BenchBodies
    let tally = Mutex(Tally())
    /// Entered once per connection, left when its tally is in.
    let reported = DispatchGroup()
    private let next = Atomic<Int>(0)

    init(deadline: ContinuousClock.Instant, bodies: BenchBodies) {
        self.deadline = deadline
        self.bodies = bodies
    }

    /// The index of the next body to send, or nil when the run is over.
    func take() -> Int? {
        guard ContinuousClock.now < deadline else { return nil }
        let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
        if let limit = bodies.limit, index >= limit { return nil }
        return index
    }

    func add(_ mine: Tally) {
        tally.withLock { all in
            all.latencies.append(contentsOf: mine.latencies)
            for (status, count) in mine.statuses { all.statuses[status, default: 0] += count }
            all.failures += mine.failures
        }
        reported.leave()
    }
}
