import Foundation
import Hummingbird
import HummingbirdCore
import KBTDCore
import KBTDPostgres
import KBTDStore
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization
import UnixSignals

/// The long-running daemon: opens the store, loads the index, starts the
/// writer, serves every listener (bound here or inherited from systemd) until
/// SIGTERM/SIGINT, then drains the write queue and commits before returning.
public struct Daemon: Sendable {
    public let settings: SettingsBox
    public let logger: Logger
    let logLevel: LogLevelControl
    let reload: (@Sendable () throws -> ServerSettings)?

    /// - Parameters:
    ///   - reload: re-reads the configuration on SIGHUP (nil: SIGHUP is not handled).
    public init(settings: ServerSettings, logger: Logger, logLevel: LogLevelControl,
                reload: (@Sendable () throws -> ServerSettings)? = nil) {
        self.settings = SettingsBox(settings)
        self.logger = logger
        self.logLevel = logLevel
        self.reload = reload
    }

    public func run() async throws {
        let initial = settings.current
        let path = initial.database
        let start = ContinuousClock.now
        let box = settings
        let admission: @Sendable () -> IndexAdmission = {
            let current = box.current
            return IndexAdmission(minSources: current.estimator.minSources, maxIndexedKeys: current.maxIndexedKeys)
        }
        let fileMode = initial.databaseMode
        let walLimit = initial.maxWALBytes
        let keyGate = KeyGate(limits: initial.keys)
        var index = HeightIndex()
        var locks: [ExclusiveLock] = []
        // A postgres:// URL: a shared database, several nodes (PostgresNode); else an SQLite file.
        let postgres = PostgresURL.isURL(path) ? try await PostgresNode.open(initial, admission: admission, logger: logger) : nil
        let openStore: @Sendable () throws -> any TelemetryStore
        if let postgres {
            openStore = postgres.storeFactory(admission: admission)
        } else {
            openStore = { try SQLiteTelemetryStore(path: path, fileMode: fileMode, walLimitBytes: walLimit, admission: admission) }
        }
        if let postgres {
            index.apply(postgres.snapshot.counts)
            keyGate.remember(postgres.keys)
        } else { do {
            // Creates and migrates the database; its admitted keys seed the index.
            try DatabaseFile.prepare(path, mode: fileMode)
            locks.append(try ExclusiveLock(path: path, what: "database", mode: fileMode))
            let store = try openStore()
            index.apply(try store.loadIndexCounts())
            try keyGate.remember(everyKeyIn: store)
        } catch let error as SQLiteError where error.isTransient {
            // A read-only or full file system under an existing database: serve
            // what can be read, refuse ingest with 503 until the writer can open it.
            logger.error("database \(path) is not writable (\(error)); serving read-only until it is")
            if let store = try? SQLiteTelemetryStore(path: path, access: .readOnly) {
                if let counts = try? store.loadIndexCounts() { index.apply(counts) }
                try? keyGate.remember(everyKeyIn: store)
            }
        } }
        if let socket = initial.unixSocket, SocketActivation.inheritedSockets().isEmpty {
            locks.append(try ExclusiveLock(path: socket + ".lock", what: "Unix socket", mode: 0o600))
        }
        logger.info("opened \(postgres.map { "\($0.database.url)" } ?? path): \(index.bySeries.count) keys in the index, \(keyGate.keyCount) stored, loaded in \(ContinuousClock.now - start)")

        let heights = HeightService(index: index, settings: initial.estimator)
        let metrics = ServerMetrics()
        let upkeep = GroupCommitWriter.Upkeep(
            retention: initial.batchRetentionDays * 86_400,
            unconfirmedKeyRetention: initial.unconfirmedKeyRetentionDays * 86_400,
            walLimitBytes: initial.maxWALBytes,
            onForget: { keyGate.forget($0) })
        let writer = GroupCommitWriter(
            openStore: openStore, capacity: initial.limits.writeQueueCapacity, maxBatchesPerCommit: initial.limits.maxBatchesPerCommit,
            upkeep: upkeep, logger: logger
        ) { added, batches, seconds in
            heights.apply(added)
            metrics.commitSeconds.record(seconds)
            metrics.commitBatches.record(Double(batches))
        }

        let catchUp = postgres?.startCatchUp { delta in
            heights.apply(delta)
            keyGate.remember(Array(delta.seriesKeys))
        }
        let router = Router(context: KBTDRequestContext.self, options: .autoGenerateHeadEndpoints)
        router.add(middleware: LogRequestsMiddleware(.debug))
        router.add(middleware: EveryResponseMiddleware(metrics: metrics))
        router.add(middleware: MethodNotAllowedMiddleware(KBTDRoutes.methods))
        let rateLimiter = ClientRateLimiter(limits: initial.limits)
        let connections = ConnectionLimiter(maximum: initial.limits.maxConnections, perClient: initial.limits.maxConnectionsPerClient)
        let sourceWeights = SourceWeights(maxVotesPerSource: initial.maxVotesPerSource,
                                          maxEntriesPerSource: initial.maxVoteEntriesPerSource)
        let ingest = IngestHandler(writer: writer, settings: settings, metrics: metrics, rateLimiter: rateLimiter,
                                   sourceWeights: sourceWeights, keyGate: keyGate)
        let heightHandlers = HeightHandlers(heights: heights, settings: settings, metrics: metrics)
        let operations = OperationsHandlers(writer: writer, settings: settings, metrics: metrics, databasePath: initial.database) {
            metrics.walBytes.set(Double(writer.walBytes))
            metrics.indexedKeys.set(Double(heights.keyCount))
            metrics.storedKeys.set(Double(keyGate.keyCount))
            metrics.refusedVotes.set(Double(sourceWeights.ledger.refusedVotes))
        }.on(postgres: postgres, catchUp: catchUp)
        router.post("/v1/batches", use: ingest.handle)
        router.get("/v1/height", use: heightHandlers.height)
        router.get("/v1/heights", use: heightHandlers.allHeights)
        router.get("/healthz", use: operations.health)
        router.get("/metrics", use: operations.prometheus)
        router.get("/v1/stats", use: operations.stats)
        router.get("/dashboard", use: DashboardHandler(operations: operations, heights: heights, metrics: metrics).page)
        let channel = HTTP1Channel.serving(router.buildResponder(), limits: initial.limits, logger: logger, metrics: metrics)

        let sockets = Self.listenerSockets(initial, logger: logger)
        let ready = ReadinessGate()
        let listening = Mutex(0)
        let logger = self.logger
        let group = MultiThreadedEventLoopGroup.singleton
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = sockets.map { socket in
            .init(service: HTTPListener(socket: socket, channel: channel, group: group, logger: logger,
                                        connections: connections) { address in
                if let path = address?.pathname, chmod(path, mode_t(initial.unixSocketMode)) != 0 {
                    logger.error("cannot set mode \(String(initial.unixSocketMode, radix: 8)) on \(path): errno \(errno)")
                }
                logger.notice("listening on \(Self.describe(address, socket))")
                if listening.withLock({ $0 += 1; return $0 }) == sockets.count {
                    logger.notice("kbtd ready")
                    ready.open()
                }
            })
        }
        if let reload {
            let settings = self.settings, logLevel = self.logLevel
            let hangups = await UnixSignalsSequence(trapping: .sighup)
            services.append(.init(service: ReloadOnHangup(hangups: hangups, load: reload, apply: { new in
                Self.apply(new, to: settings, heights: heights, writer: writer, logLevel: logLevel, logger: logger)
                rateLimiter.update(new.limits)
                sourceWeights.update(maxVotesPerSource: new.maxVotesPerSource, maxEntriesPerSource: new.maxVoteEntriesPerSource)
                connections.setLimits(maximum: new.limits.maxConnections, perClient: new.limits.maxConnectionsPerClient)
                keyGate.update(new.keys)
            }, logger: logger), successTerminationBehavior: .ignore))
        }
        if let notify = SystemdNotify() {
            // Last in the list: on SIGTERM it is told first, so STOPPING=1 goes out before the listeners drain.
            services.append(.init(service: SystemdSupervision(
                notify: notify, watchdog: SystemdNotify.watchdogInterval(), ready: ready, eventLoops: group,
                writerHeartbeatAge: { writer.heartbeatAge },
                status: {
                    let totals = writer.totals
                    return "serving: \(totals.stored) batches stored, \(totals.duplicates) duplicates, queue \(writer.queueDepth)"
                },
                logger: logger), successTerminationBehavior: .ignore))
        }
        let serviceGroup = ServiceGroup(configuration: .init(
            services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do {
            try await serviceGroup.run()
        } catch {
            writer.shutdown()
            throw error
        }
        logger.notice("listeners closed; committing what is queued")
        writer.shutdown()
        withExtendedLifetime(locks) {}
        logger.notice("kbtd stopped")
    }

    /// Inherited sockets win over configured addresses: under systemd the
    /// socket unit owns the addresses.
    static func listenerSockets(_ settings: ServerSettings, logger: Logger) -> [ListenerSocket] {
        let inherited = SocketActivation.inheritedSockets()
        if !inherited.isEmpty {
            logger.notice("socket activation: adopting \(inherited.count) listening socket(s); configured listen addresses are not used")
            return inherited.map { .inherited($0) }
        }
        var sockets: [ListenerSocket] = settings.listen.map { .tcp($0) }
        // A stale socket file from a previous run is removed by the bind (cleanupExistingSocketFile).
        if let path = settings.unixSocket { sockets.append(.unix(path: path)) }
        return sockets
    }

    /// Applies a reloaded configuration: limits, tokens, estimator settings,
    /// cache age and log level change at once; addresses and the database
    /// need a restart, which the log says.
    static func apply(_ new: ServerSettings, to box: SettingsBox, heights: HeightService, writer: GroupCommitWriter,
                      logLevel: LogLevelControl, logger: Logger) {
        let old = box.current
        var next = new
        for (key, changed) in [("listen", old.listen != new.listen), ("unix_socket", old.unixSocket != new.unixSocket),
                               ("database", old.database != new.database),
                               ("batch_retention_days", old.batchRetentionDays != new.batchRetentionDays),
                               ("unconfirmed_key_retention_days", old.unconfirmedKeyRetentionDays != new.unconfirmedKeyRetentionDays),
                               ("unix_socket_mode", old.unixSocketMode != new.unixSocketMode),
                               ("database_mode", old.databaseMode != new.databaseMode),
                               ("max_wal_bytes", old.maxWALBytes != new.maxWALBytes),
                               ("max_batches_per_commit", old.limits.maxBatchesPerCommit != new.limits.maxBatchesPerCommit),
                               ("idle_timeout_seconds", old.limits.idleTimeoutSeconds != new.limits.idleTimeoutSeconds),
                               ("header_timeout_seconds", old.limits.headerTimeoutSeconds != new.limits.headerTimeoutSeconds),
                               ("body_timeout_seconds", old.limits.bodyTimeoutSeconds != new.limits.bodyTimeoutSeconds)]
        where changed {
            logger.warning("\(key) changed in the configuration; it takes effect after a restart")
        }
        next.listen = old.listen
        next.unixSocket = old.unixSocket
        next.database = old.database
        box.replace(next)
        heights.update(settings: next.estimator)
        writer.capacity = next.limits.writeQueueCapacity
        logLevel.current = next.logLevel
    }

    static func describe(_ address: SocketAddress?, _ socket: ListenerSocket) -> String {
        guard let address else { return socket.description }
        if let path = address.pathname { return path }
        let host = address.ipAddress ?? "?"
        let port = address.port.map(String.init) ?? "?"
        let text = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        if case .inherited(let inherited) = socket { return "\(text) (fd \(inherited.fd), \(inherited.name))" }
        return text
    }
}
