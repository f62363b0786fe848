import Dispatch
import Foundation
import KBTDCore
import Logging
import Synchronization

/// What became of a submitted batch.
public enum WriteOutcome: Sendable, Equatable {
    /// Committed durably in this call.
    case stored
    /// Its batch id was already stored: nothing was counted.
    case duplicate
}

/// Why a batch was not stored; each maps to a 503 with `Retry-After`.
public enum WriteError: Error, Sendable, Equatable, CustomStringConvertible {
    case queueFull
    case shuttingDown
    case unavailable(String)

    /// What a client may be told: no file paths, no SQLite messages (those go to the log).
    public var publicReason: String {
        switch self {
        case .queueFull: "write queue is full"
        case .shuttingDown: "kbtd is shutting down"
        case .unavailable: "the database is unavailable; retry later"
        }
    }

    public var description: String {
        switch self {
        case .queueFull: "write queue is full"
        case .shuttingDown: "kbtd is shutting down"
        case .unavailable(let reason): "database unavailable: \(reason)"
        }
    }
}

/// The single writer. Requests queue compact `PendingBatch`es; one task on a
/// dedicated thread (`StoreThreads`, not the 2-thread cooperative pool, which
/// a blocking fsync would stall) takes everything queued, commits it in one
/// transaction, and only then completes each request. Many batches share one
/// fsync: group commit. The store is awaited: SQLite's commit runs on that
/// thread, PostgreSQL's suspends the task until postgres-nio answers.
///
/// A store with deferred durability (SQLite in the daemon: `DeferredDurability`)
/// returns from `commit` once the transaction is written; the writer hands the
/// commit to a second thread of its own ("kbtd-sync"), which makes the log
/// durable (one `fdatasync` for every commit written by then) and only then
/// completes the commit's requests, while the writer runs the next transaction.
/// At most `maxCommitsAwaitingSync` commits wait for it; the writer waits past that.
///
/// The queue is bounded in batches: past `capacity` a submit fails at once
/// with `.queueFull` (a 503), so memory never grows with load.
public final class GroupCommitWriter: Sendable {
    /// Called after each commit is durable, before any request of that commit
    /// completes, with the counts the commit added, in commit order: on the
    /// writer thread, or on its sync thread for a store with deferred durability.
    public typealias CommitObserver = @Sendable (_ added: AggregateDelta, _ batches: Int, _ seconds: Double) -> Void

    struct Job {
        var batch: PendingBatch
        var continuation: CheckedContinuation<WriteOutcome, any Error>
    }

    struct State {
        var queue: [Job] = []
        var capacity: Int
        var stopping = false
        var stopped = false
        /// `shutdown()` calls waiting for the writer's task to finish.
        var shutdownWaiters: [CheckedContinuation<Void, Never>] = []
        var lastError: String?
        /// `lastError` is a commit's (or its fsync's): only a commit that succeeds clears it, not
        /// opening the database again (which a full disk allows).
        var commitFailed = false
        var heartbeat = ContinuousClock.now
        var storedBatches = 0
        var duplicateBatches = 0
        var walBytes: Int64 = 0
    }

    /// Housekeeping the writer thread does between commits.
    public struct Upkeep: Sendable {
        /// Seconds seen batch ids are kept (pruned hourly).
        public var retention: Double
        /// Seconds a key never admitted to the index is kept (0: forever).
        public var unconfirmedKeyRetention: Double = 0
        /// Seconds a client network's keyed hash is kept after it last reported a key (0: forever).
        public var sourceRetention: Double = 0
        /// Seconds a key without trusted data is kept after it was last reported (0: forever).
        public var idleKeyRetention: Double = 0
        /// WAL size past which a truncating checkpoint is tried after commits.
        public var walLimitBytes: Int64 = 64 << 20
        /// Told which keys the pruning deleted.
        public var onForget: @Sendable ([SeriesKey]) -> Void = { _ in }
        /// Told, after each commit that displaced keys from a full index and
        /// before its counts are applied, which keys left the index.
        public var onEvict: @Sendable ([SeriesKey]) -> Void = { _ in }

        public init(retention: Double, unconfirmedKeyRetention: Double = 0, sourceRetention: Double = 0,
                    walLimitBytes: Int64 = 64 << 20, onForget: @escaping @Sendable ([SeriesKey]) -> Void = { _ in }) {
            self.retention = retention
            self.unconfirmedKeyRetention = unconfirmedKeyRetention
            self.sourceRetention = sourceRetention
            self.walLimitBytes = walLimitBytes
            self.onForget = onForget
        }
    }

    /// A commit written and waiting for the sync thread to make it durable.
    struct Written {
        var jobs: [Job]
        var result: CommitResult
        var start: ContinuousClock.Instant
        var durability: WALDurability
    }

    struct Syncing {
        var written: [Written] = []
        /// When the sync thread took what it is syncing now (nil: idle).
        var since: ContinuousClock.Instant?
        var stopping = false
        /// Why a sync failed: every commit handed over since fails too, until the writer,
        /// having waited for the sync thread, drops the store and clears it.
        var failure: String?
    }

    /// Most commits written and waiting for the sync thread (past it, the writer waits).
    static let maxCommitsAwaitingSync = 2

    public let maxBatchesPerCommit: Int
    let state: Mutex<State>
    private let wakeup = DispatchSemaphore(value: 0)
    let syncing = Mutex(Syncing())
    /// Signalled per commit handed to the sync thread, and at its stop.
    let syncWakeup = DispatchSemaphore(value: 0)
    /// Signalled each time the sync thread finishes a round (the writer waits on it).
    let syncProgress = DispatchSemaphore(value: 0)
    let logger: Logger

    /// Starts the writer thread, which opens the store with `openStore` and
    /// owns it from then on. While the store cannot be opened (a read-only or
    /// missing file system), submits fail with `.unavailable` and the thread
    /// retries every second, so ingest recovers by itself.
    ///
    /// - Parameter retention: seconds seen batch ids are kept (pruned hourly).
    public convenience init(openStore: @escaping @Sendable () async throws -> any TelemetryStore, capacity: Int,
                            maxBatchesPerCommit: Int = 4096, retention: Double, logger: Logger,
                            onCommit: @escaping CommitObserver) {
        self.init(openStore: openStore, capacity: capacity, maxBatchesPerCommit: maxBatchesPerCommit,
                  upkeep: Upkeep(retention: retention), logger: logger, onCommit: onCommit)
    }

    public init(openStore: @escaping @Sendable () async throws -> any TelemetryStore, capacity: Int, maxBatchesPerCommit: Int = 4096,
                upkeep: Upkeep, logger: Logger, onCommit: @escaping CommitObserver) {
        self.state = Mutex(State(capacity: capacity))
        self.maxBatchesPerCommit = maxBatchesPerCommit
        self.logger = logger
        let thread = StoreThreads(name: "kbtd-writer")
        let syncThread = StoreThreads(name: "kbtd-sync")
        Task(executorPreference: syncThread) { [self] in
            self.completeDurableCommits(onEvict: upkeep.onEvict, onCommit: onCommit)
            syncThread.stop()
        }
        Task(executorPreference: thread) { [self] in
            await self.run(openStore: openStore, upkeep: upkeep, onCommit: onCommit)
            thread.stop()
        }
    }

    /// Queues a batch and waits for the commit that holds it.
    public func submit(_ batch: PendingBatch) async throws -> WriteOutcome {
        try await withCheckedThrowingContinuation { continuation in
            let refusal: WriteError? = state.withLock { state in
                if state.stopping { return .shuttingDown }
                if state.queue.count >= state.capacity { return .queueFull }
                state.queue.append(Job(batch: batch, continuation: continuation))
                return nil
            }
            if let refusal {
                continuation.resume(throwing: refusal)
            } else {
                wakeup.signal()
            }
        }
    }

    /// Batches waiting for a commit.
    public var queueDepth: Int { state.withLock { $0.queue.count } }

    /// The last commit's error, nil once a commit succeeds again.
    public var lastError: String? { state.withLock { $0.lastError } }

    /// Most batches that may wait for a commit (reloadable).
    public var capacity: Int {
        get { state.withLock { $0.capacity } }
        set { state.withLock { $0.capacity = max(1, newValue) } }
    }

    /// Time since the writer thread last went round its loop. It goes round at
    /// least twice a second when idle, so a large value means a commit (an
    /// fsync, a lock) is stuck: the systemd watchdog stops on it.
    /// The sync thread's fsync counts too: a commit waiting on a stuck one shows here even
    /// while the writer, not yet held back by it, goes round.
    public var heartbeatAge: Duration {
        let now = ContinuousClock.now
        let writer = now - state.withLock { $0.heartbeat }
        guard let since = syncing.withLock({ $0.since }) else { return writer }
        return max(writer, now - since)
    }

    /// Bytes in the write-ahead log, as of the last commit.
    public var walBytes: Int64 { state.withLock { $0.walBytes } }

    /// Batches committed and duplicates recognised since start.
    public var totals: (stored: Int, duplicates: Int) { state.withLock { ($0.storedBatches, $0.duplicateBatches) } }

    /// Stops taking batches, commits everything already queued, and returns
    /// once the writer's task has finished (awaiting it: no thread waits).
    public func shutdown() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let stopped = state.withLock { state -> Bool in
                state.stopping = true
                if !state.stopped { state.shutdownWaiters.append(done) }
                return state.stopped
            }
            if stopped { done.resume() } else { wakeup.signal() }
        }
    }

    private func run(openStore: () async throws -> any TelemetryStore, upkeep: Upkeep, onCommit: CommitObserver) async {
        var store: (any TelemetryStore)?
        var lastOpenAttempt = ContinuousClock.now - .seconds(10)
        var lastPrune = 0.0
        var lastIdleCheckpoint = 0.0
        while true {
            if store == nil, ContinuousClock.now - lastOpenAttempt >= .seconds(1) {
                lastOpenAttempt = ContinuousClock.now
                do {
                    store = try await openStore()
                    if state.withLock({ $0.lastError }) != nil { logger.notice("database open again") }
                    state.withLock { if !$0.commitFailed { $0.lastError = nil } }
                } catch {
                    let reason = "\(error)"
                    if state.withLock({ $0.lastError }) != reason { logger.error("cannot open the database for writing: \(reason)") }
                    state.withLock { $0.lastError = reason }
                }
            }
            // A sync that failed while the writer was idle: the store is opened again.
            if store != nil, syncing.withLock({ $0.failure != nil }) {
                awaitSyncThread()
                if takeSyncFailure() { store = nil }
                continue
            }
            // Forget expired batch ids at start and hourly after, busy or idle.
            let now = Date().timeIntervalSince1970
            if let store, now - lastPrune > 3600 {
                lastPrune = now
                await runHourlyUpkeep(store, now: now, upkeep: upkeep)
            }
            let (jobs, stopping) = state.withLock { state -> ([Job], Bool) in
                state.heartbeat = ContinuousClock.now
                let take = min(state.queue.count, maxBatchesPerCommit)
                let jobs = Array(state.queue.prefix(take))
                state.queue.removeFirst(take)
                return (jobs, state.stopping)
            }
            if jobs.isEmpty {
                if stopping {
                    awaitSyncThread()
                    break
                }
                // Idle: a WAL a long reader kept from shrinking is truncated once it lets go.
                if let wal = store as? any WALCheckpointing, now - lastIdleCheckpoint >= 5 {
                    lastIdleCheckpoint = now
                    let wal = wal.checkpointIfLarge(limit: upkeep.walLimitBytes)
                    state.withLock { $0.walBytes = wal }
                }
                waitForWork()
                continue
            }
            if let open = store {
                // After a failed commit the connection is dropped and reopened:
                // a file system that went read-only leaves SQLite read-only until then.
                if await !commit(jobs, store: open, onEvict: upkeep.onEvict, onCommit: onCommit) { store = nil }
                if let log = open as? any WALCheckpointing {
                    let wal = log.checkpointIfLarge(limit: upkeep.walLimitBytes)
                    state.withLock { $0.walBytes = wal }
                }
            } else {
                let reason = state.withLock { $0.lastError } ?? "database not open"
                for job in jobs { job.continuation.resume(throwing: WriteError.unavailable(reason)) }
            }
        }
        syncing.withLock { $0.stopping = true }
        syncWakeup.signal()
        let waiters = state.withLock { state in
            state.stopped = true
            defer { state.shutdownWaiters = [] }
            return state.shutdownWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Sleeps the writer's own thread until a batch is queued, or half a second
    /// (the idle tick: heartbeat, hourly pruning, idle checkpoint). Nothing else
    /// runs on that thread; the wait is for requests, never for the database.
    private func waitForWork() {
        _ = wakeup.wait(timeout: .now() + .milliseconds(500))
    }

    /// Commits `jobs` and completes their requests, or, for a store with deferred durability,
    /// hands the written commit to the sync thread, which completes them; false when the commit
    /// (or an earlier commit's sync) failed and the store must be opened again.
    private func commit(_ jobs: [Job], store: any TelemetryStore, onEvict: @Sendable ([SeriesKey]) -> Void,
                        onCommit: CommitObserver) async -> Bool {
        let start = ContinuousClock.now
        let durability = (store as? any DeferredDurability)?.durability
        do {
            let result = try await store.commit(jobs.map(\.batch))
            guard let durability else {
                complete(jobs: jobs, result: result, start: start, onEvict: onEvict, onCommit: onCommit)
                return true
            }
            return handOver(Written(jobs: jobs, result: result, start: start, durability: durability))
        } catch {
            // The commits before it still complete (or fail) first, in order.
            if durability != nil { awaitSyncThread(); _ = takeSyncFailure() }
            let reason = "\(error)"
            logger.error("commit of \(jobs.count) batches failed", metadata: ["error": "\(reason)"])
            state.withLock { $0.lastError = reason; $0.commitFailed = true }
            for job in jobs {
                job.continuation.resume(throwing: WriteError.unavailable(reason))
            }
            return false
        }
    }

    /// Completes a durable commit's requests: the counters, the observers, then each request.
    func complete(jobs: [Job], result: CommitResult, start: ContinuousClock.Instant,
                          onEvict: @Sendable ([SeriesKey]) -> Void, onCommit: CommitObserver) {
        let elapsed = ContinuousClock.now - start
        let stored = result.stored.filter { $0 }.count
        let recovered = state.withLock { state in
            defer {
                state.lastError = nil
                state.commitFailed = false
            }
            state.storedBatches += stored
            state.duplicateBatches += jobs.count - stored
            return state.commitFailed
        }
        if recovered { logger.notice("database writable again: a commit succeeded") }
        if !result.evicted.isEmpty { onEvict(result.evicted) }
        onCommit(result.added, jobs.count, Double(elapsed.components.attoseconds) / 1e18 + Double(elapsed.components.seconds))
        for (job, stored) in zip(jobs, result.stored) {
            job.continuation.resume(returning: stored ? .stored : .duplicate)
        }
    }
}
