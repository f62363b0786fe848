import Foundation
import Hummingbird
import HummingbirdCore
import KBTDCore
import KBTDPostgres
import KBTDStore
import Logging
import NIOCore
import Synchronization

/// The daemon's parts wired together, apart from the process: the store, the
/// group-commit writer, the height index, the limits and the router with its
/// middlewares. `Daemon` binds listeners around it; tests answer requests
/// in-process through `respond(to:context:)`.
///
///     let app = try KBTDApp(settings: settings, logger: logger)
///     let response = await app.respond(to: request, context: context)
///     await app.shutdown()
public final class KBTDApp: Sendable {
    /// The running settings (replaced by `reload(_:)`).
    public let settings: SettingsBox
    let logger: Logger
    let logLevel: LogLevelControl?
    let metrics: ServerMetrics
    let heights: LiveHeights
    let writer: GroupCommitWriter
    let rateLimiter: ClientRateLimiter
    let connections: ConnectionLimiter
    let sourceWeights: SourceWeights
    let keyGate: KeyGate
    let responder: RouterResponder<KBTDRequestContext>
    /// The HTTP front's rules and what every answer carries, for every path (`Listener/Front`).
    let front: Front
    /// `POST /v1/batches` and its two middlewares: the router's, and the h2 batch path's
    /// (`HTTP2FrameFront`, through `Front`), one set of rules for both.
    let ingest: IngestRoute
    let rateLimit: RateLimitMiddleware
    let ingestAuth: IngestAuthMiddleware
    /// Held while the app lives: one daemon per database file.
    /// Held until `shutdown()` has committed the last batch.
    private let databaseLock: Mutex<ExclusiveLock?>
    /// Polls other nodes' commits into the index (PostgreSQL only).
    let catchUp: IndexCatchUp?
    /// Runs the catch-up until `shutdown()`.
    let background: BackgroundServices
    /// Off from the start of a graceful shutdown (`/readyz`).
    let readiness = Readiness()

    /// Creates (or migrates) the database, loads the index from it and starts
    /// the writer thread. A database on a read-only or full file system is
    /// served read-only (ingest answers 503 until the writer can open it).
    ///
    /// - Parameter logLevel: what `reload(_:)` sets the log level through (nil: not changed).
    ///   - postgres: the node's PostgreSQL side when `database` is a URL (`PostgresNode.open`, done
    ///     before: it is async); nil for an SQLite file.
    ///   - uptime: the monotonic seconds the ingest rate limiter refills its buckets by (tests hand two
    ///     apps one clock, so both refuse with the same `Retry-After`).
    public init(settings initial: ServerSettings, logger: Logger, logLevel: LogLevelControl? = nil,
                postgres: PostgresNode? = nil,
                uptime: @escaping @Sendable () -> Double = { ProcessInfo.processInfo.systemUptime }) throws {
        let path = initial.database
        let start = ContinuousClock.now
        // The key lives beside an SQLite database: its folder is checked first (exit 73 when missing);
        // then a bad key file stops the start before the database is opened.
        if postgres == nil { try DatabaseFile.prepare(path, mode: initial.databaseMode) }
        let sourceKey = try SourceKeyFile.load(for: initial, logger: logger)
        let box = SettingsBox(initial)
        let admission: @Sendable () -> IndexAdmission = {
            let current = box.current
            return IndexAdmission(minSources: current.estimator.minSources, maxIndexedKeys: current.maxIndexedKeys)
        }
        let fileMode = initial.databaseMode
        let openStore = StoreLocation(database: path).writer(initial, node: postgres, admission: admission)
        let keyGate = KeyGate(limits: initial.keyLimits)
        var index = HeightIndex()
        // The day's abuse budgets as the store kept them: a restart hands no network a fresh day.
        let today = SourcePolicy.day(of: Date().timeIntervalSince1970)
        var ledger = SourceLedger(day: today)
        var lock: ExclusiveLock?
        if let postgres {
            index.apply(postgres.snapshot.counts)
            keyGate.remember(postgres.keys)
            if postgres.ledger.day == today { ledger = postgres.ledger }
        } else { do {
            // Creates and migrates the database; its admitted keys seed the index.
            try DatabaseFile.prepare(path, mode: fileMode)
            lock = try ExclusiveLock(path: path, what: "database", mode: fileMode)
            let store = try StoreLocation.sqliteWriter(path, initial, admission: admission)
            index.apply(try store.loadIndexCounts())
            try keyGate.remember(everyKeyOf: store.forEachKey)
            ledger = try store.loadLedger(day: today)
        } catch let error as SQLiteError where error.isTransient {
            // A read-only or full file system under an existing database: serve
            // what can be read, refuse ingest with 503 until the writer can open it.
            logger.error("database \(path) is not writable (\(error)); serving read-only until it is")
            if let store = try? SQLiteTelemetryStore(path: path, access: .readOnly) {
                if let counts = try? store.loadIndexCounts() { index.apply(counts) }
                try? keyGate.remember(everyKeyOf: store.forEachKey)
                if let kept = try? store.loadLedger(day: today) { ledger = kept }
            }
        } }
        logger.info("opened \(postgres.map { "\($0.database.url)" } ?? path): \(index.bySeries.count) keys in the index, \(keyGate.keyCount) stored, loaded in \(ContinuousClock.now - start)")

        let heights = LiveHeights(index: index, settings: initial.estimator, cacheLimitBytes: initial.answerCacheBytes)
        let metrics = ServerMetrics(postgres: postgres != nil)
        var upkeep = GroupCommitWriter.Upkeep(
            retention: initial.batchRetentionDays * 86_400,
            unconfirmedKeyRetention: initial.unconfirmedKeyRetentionDays * 86_400,
            sourceRetention: initial.sourceRetentionDays * 86_400,
            walLimitBytes: initial.maxWALBytes,
            onForget: { keys in
                keyGate.forget(keys)
                heights.remove(keys)
            })
        upkeep.idleKeyRetention = initial.idleKeyRetentionDays * 86_400
        upkeep.onEvict = { heights.remove($0) }
        let writer = GroupCommitWriter(
            openStore: openStore, capacity: initial.limits.writeQueueCapacity, maxBatchesPerCommit: initial.limits.maxBatchesPerCommit,
            upkeep: upkeep, logger: logger
        ) { added, batches, seconds in
            heights.apply(added)
            metrics.commitSeconds.record(seconds)
            metrics.commitBatches.record(Double(batches))
        }
        settings = box
        self.logger = logger
        self.logLevel = logLevel
        self.metrics = metrics
        self.heights = heights
        self.writer = writer
        self.keyGate = keyGate
        databaseLock = Mutex(lock)
        let rateLimiter = ClientRateLimiter(limits: initial.limits, uptime: uptime)
        let sourceWeights = SourceWeights(maxVotesPerSource: initial.maxVotesPerSource,
                                          maxEntriesPerSource: initial.maxVoteEntriesPerSource, key: sourceKey)
        sourceWeights.restore(ledger)
        keyGate.restore(ledger)
        self.rateLimiter = rateLimiter
        self.sourceWeights = sourceWeights
        connections = ConnectionLimiter(maximum: initial.limits.maxConnections, perClient: initial.limits.maxConnectionsPerClient)
        // Other nodes' commits reach this node's index through the catch-up (PostgreSQL only).
        let catchUp = postgres?.makeCatchUp(apply: { delta in
            heights.apply(delta)
            keyGate.remember(Array(delta.seriesKeys))
            metrics.store.postgres?.catchUpCommits.increment()
        }, absorb: { ledgers in
            // Budgets other nodes' batches spent today count here too: a network gets one day's budget per cluster.
            for ledger in ledgers {
                sourceWeights.absorb(ledger)
                keyGate.absorb(ledger)
            }
        })
        self.catchUp = catchUp
        background = BackgroundServices([ReleaseDecisionService(heights: heights, logger: logger)]
                                            + (catchUp.map { [IndexCatchUpService(catchUp: $0)] } ?? []), logger: logger)
        // One HeightRoutes, so one cache of rendered answers, for the router and the h2 fast path.
        let heightRoutes = HeightRoutes(heights: heights, settings: box, metrics: metrics)
        let ingest = IngestRoute(writer: writer, settings: box, metrics: metrics, sourceWeights: sourceWeights, keyGate: keyGate,
                                 bodies: BodyBudget())
        let rateLimit = RateLimitMiddleware(limiter: rateLimiter, metrics: metrics)
        let ingestAuth = IngestAuthMiddleware(settings: box, metrics: metrics)
        front = Front(heights: heightRoutes, ingest: ingest, rateLimit: rateLimit, auth: ingestAuth, logger: logger)
        self.ingest = ingest
        self.rateLimit = rateLimit
        self.ingestAuth = ingestAuth
        responder = Self.router(settings: box, metrics: metrics, heights: heights, heightRoutes: heightRoutes, writer: writer,
                                ingest: ingest, rateLimit: rateLimit, ingestAuth: ingestAuth, sourceWeights: sourceWeights,
                                keyGate: keyGate, databasePath: path, postgres: postgres, catchUp: catchUp,
                                readiness: readiness).buildResponder()
    }

    /// The routes of the API table behind the middlewares, outermost first:
    /// the request log, the request counter (it sees every status), JSON
    /// bodies for router errors, 405 for a known path's wrong method; then per
    /// group: ingest's rate limit and token, the operations endpoints' access rule.
    private static func router(settings: SettingsBox, metrics: ServerMetrics, heights: LiveHeights, heightRoutes: HeightRoutes,
                               writer: GroupCommitWriter, ingest: IngestRoute, rateLimit: RateLimitMiddleware,
                               ingestAuth: IngestAuthMiddleware, sourceWeights: SourceWeights, keyGate: KeyGate,
                               databasePath: String, postgres: PostgresNode?, catchUp: IndexCatchUp?,
                               readiness: Readiness) -> Router<KBTDRequestContext> {
        let router = Router(context: KBTDRequestContext.self, options: .autoGenerateHeadEndpoints)
        router.add(middleware: LogRequestsMiddleware(.debug))
        router.add(middleware: MetricsMiddleware(metrics: metrics))
        router.add(middleware: JSONErrorMiddleware())
        router.add(middleware: MethodNotAllowedMiddleware(KBTDRoutes.methods))

        router.group()
            .add(middleware: rateLimit)
            .add(middleware: ingestAuth)
            .post("/v1/batches", use: ingest.handle)

        router.get("/v1/height", use: heightRoutes.height)
        router.get("/v1/heights", use: heightRoutes.allHeights)

        let operations = OperationsRoutes(writer: writer, settings: settings, metrics: metrics, databasePath: databasePath,
                                          readiness: readiness) {
            metrics.walBytes.set(Double(writer.walBytes))
            metrics.indexedKeys.set(Double(heights.keyCount))
            metrics.storedKeys.set(Double(keyGate.keyCount))
            let ledger = sourceWeights.ledger
            metrics.refusedVotes.set(Double(ledger.refusedVotes))
            metrics.implausibleVotes.set(Double(ledger.implausibleVotes))
            metrics.bodyBytesHeld.set(Double(ingest.bodies.held))
        }.on(postgres: postgres, catchUp: catchUp)
        router.get("/healthz", use: operations.health)
        router.get("/readyz", use: operations.ready)
        router.group()
            .add(middleware: AdminAccessMiddleware(settings: settings))
            .get("/metrics", use: operations.prometheus)
            .get("/v1/stats", use: operations.stats)
            .get("/dashboard", use: DashboardRoute(operations: operations, heights: heights, metrics: metrics).page)
        return router
    }

    /// Answers one request. Never throws: the middlewares answer router errors,
    /// and anything else is a 500 whose cause goes to the log, not the client.
    public func respond(to request: Request, context: KBTDRequestContext) async -> Response {
        do {
            return try await responder.respond(to: request, context: context)
        } catch let error as any HTTPResponseError {
            // JSONErrorMiddleware answers router errors; this is the backstop.
            return JSONResponse.error(error.status, "error", detail: "\(error.status.code) \(error.status.reasonPhrase)")
        } catch {
            logger.error("unhandled error answering \(request.method) \(request.uri.path): \(error)")
            return JSONResponse.error(.internalServerError, "internal error", detail: "see the daemon's log")
        }
    }

    /// Applies a reloaded configuration (SIGHUP): every `reloadable` setting
    /// changes at once; for the others the log says a restart is needed.
    public func reload(_ new: ServerSettings) {
        let old = settings.current
        var next = new
        for key in Setting.changedRestartOnly(from: old, to: new) {
            logger.warning("\(key) changed in the configuration; it takes effect after a restart")
        }
        next.listen = old.listen
        next.unixSocket = old.unixSocket
        next.database = old.database
        settings.replace(next)
        heights.update(settings: next.estimator)
        writer.capacity = next.limits.writeQueueCapacity
        logLevel?.current = next.logLevel
        rateLimiter.update(next.limits)
        sourceWeights.update(maxVotesPerSource: next.maxVotesPerSource, maxEntriesPerSource: next.maxVoteEntriesPerSource)
        connections.setLimits(maximum: next.limits.maxConnections, perClient: next.limits.maxConnectionsPerClient)
        keyGate.update(next.keyLimits)
    }

    /// Stops taking batches and commits everything queued (awaiting the writer's task).
    public func shutdown() async {
        readiness.beginShutdown()
        // The catch-up first: nothing is applied to the index once the writer stops.
        await background.shutdown()
        await writer.shutdown()
        // Nothing writes any more: another kbtd (or this process, restarting in-process) may take the file.
        databaseLock.withLock { $0 = nil }
    }

    /// What systemd's `STATUS=` shows.
    var status: String {
        let totals = writer.totals
        return "serving: \(totals.stored) batches stored, \(totals.duplicates) duplicates, queue \(writer.queueDepth)"
    }
}
