import Foundation
import Hummingbird
import KBTDCore
import KBTDStore
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// The long-running daemon: opens the store, loads the index, starts the
/// writer, serves every listener until SIGTERM/SIGINT, then drains the write
/// queue and commits before returning.
public struct Daemon: Sendable {
    public let settings: SettingsBox
    public let logger: Logger

    public init(settings: ServerSettings, logger: Logger) {
        self.settings = SettingsBox(settings)
        self.logger = logger
    }

    public func run() async throws {
        let initial = settings.current
        let store = try SQLiteTelemetryStore(path: initial.database)
        let start = ContinuousClock.now
        var index = HeightIndex()
        index.apply(try store.loadCounts())
        logger.info("opened \(initial.database): \(index.bySeries.count) keys loaded in \(ContinuousClock.now - start)")

        let heights = HeightService(index: index, settings: initial.estimator)
        let metrics = ServerMetrics()
        let writer = GroupCommitWriter(
            store: store, capacity: initial.limits.writeQueueCapacity, maxBatchesPerCommit: initial.limits.maxBatchesPerCommit,
            retention: initial.batchRetentionDays * 86_400, logger: logger
        ) { added, batches, seconds in
            heights.apply(added)
            metrics.commitSeconds.record(seconds)
            metrics.commitBatches.record(Double(batches))
        }

        let router = Router(context: KBTDRequestContext.self)
        let ingest = IngestHandler(writer: writer, settings: settings, metrics: metrics)
        let heightHandlers = HeightHandlers(heights: heights, settings: settings, metrics: metrics)
        let operations = OperationsHandlers(writer: writer, settings: settings, metrics: metrics, databasePath: initial.database)
        router.post("/v1/batches", use: ingest.handle)
        router.get("/v1/height", use: heightHandlers.height)
        router.get("/v1/heights", use: heightHandlers.allHeights)
        router.get("/healthz", use: operations.health)
        router.get("/metrics", use: operations.prometheus)
        router.get("/v1/stats", use: operations.stats)
        let responder = router.buildResponder()

        var addresses: [BindAddress] = initial.listen.map { .hostname($0.host, port: $0.port) }
        if let path = initial.unixSocket {
            Self.removeStaleSocket(at: path)
            addresses.append(.unixDomainSocket(path: path))
        }
        let listening = Mutex(0)
        let total = addresses.count
        let logger = self.logger
        let services: [any Service] = addresses.map { address in
            Application(
                responder: responder,
                server: .http1(configuration: .init(idleTimeout: .seconds(Int64(initial.limits.idleTimeoutSeconds)))),
                configuration: ApplicationConfiguration(address: address, serverName: nil),
                onServerRunning: { channel in
                    logger.notice("listening on \(Self.describe(channel.localAddress))")
                    if listening.withLock({ $0 += 1; return $0 }) == total {
                        logger.notice("kbtd ready")
                    }
                },
                logger: logger)
        }
        let group = ServiceGroup(configuration: .init(
            services: services.map { .init(service: $0) }, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do {
            try await group.run()
        } catch {
            writer.shutdown()
            throw error
        }
        logger.notice("listeners closed; committing what is queued")
        writer.shutdown()
        logger.notice("kbtd stopped")
    }

    static func describe(_ address: SocketAddress?) -> String {
        guard let address else { return "?" }
        if let path = address.pathname { return path }
        let host = address.ipAddress ?? "?"
        let port = address.port.map(String.init) ?? "?"
        return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// A socket file left by a previous run would make bind fail; regular files are left alone.
    static func removeStaleSocket(at path: String) {
        var info = stat()
        if lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFSOCK {
            unlink(path)
        }
    }
}
