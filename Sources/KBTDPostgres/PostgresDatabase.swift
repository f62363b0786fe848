import Dispatch
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// One process's connection pool to the shared PostgreSQL database
/// (postgres-nio's `PostgresClient`, run in its own task until `close()`).
/// The writer's store, the index catch-up and the read paths lease from it.
public final class PostgresDatabase: Sendable {
    public let url: PostgresURL
    let client: PostgresClient
    let logger: Logger
    /// How long a lease may wait for a connection before the operation fails
    /// (PostgreSQL down): the writer answers 503 instead of holding requests.
    let leaseTimeout: Duration
    /// How long a leased operation may run before it is given up and its
    /// connection closed (the server then rolls back whatever it had not
    /// committed): a connection that stops answering (seen once after a
    /// PostgreSQL restart) must not hold the writer, and with it shutdown, forever.
    let operationTimeout: Duration
    private let runner: Task<Void, Never>
    private let state = Mutex(PoolState())

    struct PoolState {
        var leased = 0
        var lastError: String?
        var lastSuccess: ContinuousClock.Instant?
    }

    /// Why a database operation failed, with what may be logged (never the password).
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        /// SQLSTATE when the server answered with an error.
        public var sqlState: String?
        /// True for a serialization failure or a deadlock: the transaction may simply be retried.
        public var isRetryable: Bool { sqlState == "40001" || sqlState == "40P01" }
    }

    /// - Parameters:
    ///   - maxConnections: pool size (the writer needs one, catch-up one, reads the rest).
    public init(url: PostgresURL, maxConnections: Int = 4, leaseTimeout: Duration = .seconds(5),
                operationTimeout: Duration = .seconds(60), logger: Logger) {
        var configuration = url.configuration()
        configuration.options.maximumConnections = max(2, maxConnections)
        configuration.options.minimumConnections = 0
        configuration.options.connectTimeout = .seconds(5)
        self.url = url
        self.logger = logger
        self.leaseTimeout = leaseTimeout
        self.operationTimeout = operationTimeout
        let client = PostgresClient(configuration: configuration, backgroundLogger: Logger(label: "kbtd.postgres", factory: { _ in SwiftLogNoOpLogHandler() }))
        self.client = client
        // On the pool's own queue, not the cooperative pool (`PoolExecutor`).
        runner = Task(executorPreference: PoolExecutor.shared) { await client.run() }
    }

    /// Stops the pool (open leases finish first).
    public func close() {
        runner.cancel()
    }

    /// Connections leased right now, the last error (nil after a success) and
    /// the time since the last successful operation: `/healthz` and `/metrics`.
    public var poolState: (leased: Int, lastError: String?, sinceLastSuccess: Duration?) {
        state.withLock { ($0.leased, $0.lastError, $0.lastSuccess.map { ContinuousClock.now - $0 }) }
    }

    /// Leases a connection for `body`. Waiting for the lease is bounded by
    /// `leaseTimeout`; once `body` runs it is not cancelled (a transaction is
    /// committed or rolled back whole), but after `operationTimeout` the caller
    /// is answered with a failure and the connection is closed, which makes the
    /// server roll back an open transaction. A batch whose COMMIT did reach the
    /// server is then answered 503 although stored; its retry finds the claimed
    /// id and is answered 200 `duplicate`, so nothing is counted twice.
    /// `deadline` replaces `operationTimeout` for this operation.
    public func withConnection<T: Sendable>(deadline: Duration? = nil,
                                            _ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let (timeout, operationTimeout) = (leaseTimeout, deadline ?? self.operationTimeout)
        do {
            // The lease runs in a task of its own: when no connection comes in time, or the
            // operation stops answering, the caller is answered at once (the gate decides once).
            let value: T = try await withCheckedThrowingContinuation { continuation in
                let gate = LeaseGate<T>(continuation)
                let watchdog = Task(executorPreference: PoolExecutor.shared) {
                    try? await Task.sleep(for: timeout)
                    if Task.isCancelled { return }
                    gate.expire(Failure(description: "no connection to PostgreSQL within \(timeout)"))
                    // Running by now: give it the operation's own bound, counted from here.
                    try? await Task.sleep(for: operationTimeout)
                    if Task.isCancelled { return }
                    if let connection = gate.abandon(Failure(description: "PostgreSQL did not answer within \(operationTimeout)")) {
                        try? await connection.close()
                    }
                }
                Task(executorPreference: PoolExecutor.shared) {
                    do {
                        let value = try await self.client.withConnection { connection in
                            guard gate.begin(connection) else { throw Failure(description: "connection lease given up") }
                            self.state.withLock { $0.leased += 1 }
                            defer { self.state.withLock { $0.leased -= 1 } }
                            return try await body(connection)
                        }
                        watchdog.cancel()
                        gate.finish(.success(value))
                    } catch {
                        watchdog.cancel()
                        gate.finish(.failure(error))
                    }
                }
            }
            state.withLock { $0.lastError = nil; $0.lastSuccess = .now }
            return value
        } catch let error as any KBTDDecision {
            // kbtd's own verdict (a newer schema, an import already made): the database answered fine.
            state.withLock { $0.lastError = nil; $0.lastSuccess = .now }
            throw error
        } catch {
            let failure = Self.failure(error)
            state.withLock { $0.lastError = failure.description }
            throw failure
        }
    }

    /// Runs `body` in a transaction (`BEGIN` ... `COMMIT`, `ROLLBACK` on a throw).
    public func withTransaction<T: Sendable>(
        deadline: Duration? = nil,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await withConnection(deadline: deadline) { connection in
            try await connection.query("BEGIN", logger: self.logger)
            do {
                let value = try await body(connection)
                try await connection.query("COMMIT", logger: self.logger)
                return value
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: self.logger)
                throw error
            }
        }
    }

    /// A readable account of `error`: SQLSTATE and the server's message for a
    /// server error, the pool or connection problem otherwise. postgres-nio's
    /// own description hides everything; this shows no password either.
    public static func describe(_ error: any Error) -> String {
        if error is PSQLError || error is PostgresDecodingError { return failure(error).description }
        return String(describing: error)
    }

    static func failure(_ error: any Error) -> Failure {
        if let failure = error as? Failure { return failure }
        if let decision = error as? any KBTDDecision { return Failure(description: String(describing: decision)) }
        if let error = error as? PSQLError {
            if let info = error.serverInfo {
                let state = info[.sqlState]
                return Failure(description: "PostgreSQL error \(state ?? "?"): \(info[.message] ?? "")", sqlState: state)
            }
            return Failure(description: "PostgreSQL connection: \(error.code)")
        }
        if let error = error as? PostgresDecodingError {
            return Failure(description: "PostgreSQL result decoding failed: \(error.code) in column \(error.columnName)")
        }
        return Failure(description: "PostgreSQL: \(String(describing: error))")
    }
}

/// An error kbtd itself raised inside a database operation: passed through
/// unchanged (not turned into a `PostgresDatabase.Failure`).
public protocol KBTDDecision: Error {}

/// One lease's outcome, decided once: the body ran (`begin`, then `finish`),
/// or the wait expired first (`expire`) and a connection granted later is handed back.
final class LeaseGate<T: Sendable>: Sendable {
    private enum Phase { case waiting, running, done }
    private let state: Mutex<(phase: Phase, continuation: CheckedContinuation<T, any Error>?, connection: PostgresConnection?)>

    init(_ continuation: CheckedContinuation<T, any Error>) {
        state = Mutex((.waiting, continuation, nil))
    }

    func begin(_ connection: PostgresConnection) -> Bool {
        state.withLock { state in
            guard state.phase == .waiting else { return false }
            state.phase = .running
            state.connection = connection
            return true
        }
    }

    /// Gives up an operation that has run too long: answers the caller and
    /// returns the connection to close (nil when the operation already ended).
    func abandon(_ error: any Error) -> PostgresConnection? {
        let (continuation, connection) = state.withLock { state -> (CheckedContinuation<T, any Error>?, PostgresConnection?) in
            guard state.phase == .running else { return (nil, nil) }
            state.phase = .done
            defer { state.continuation = nil; state.connection = nil }
            return (state.continuation, state.connection)
        }
        continuation?.resume(throwing: error)
        return connection
    }

    func expire(_ error: any Error) {
        let continuation = state.withLock { state -> CheckedContinuation<T, any Error>? in
            guard state.phase == .waiting else { return nil }
            state.phase = .done
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(throwing: error)
    }

    func finish(_ result: Result<T, any Error>) {
        let continuation = state.withLock { state -> CheckedContinuation<T, any Error>? in
            state.phase = .done
            defer { state.continuation = nil; state.connection = nil }
            return state.continuation
        }
        continuation?.resume(with: result)
    }
}

/// Runs the pool's own tasks (its run loop, each lease and its watchdog) on a
/// queue of their own: postgres-nio's progress never waits for a cooperative-pool
/// thread that synchronous work elsewhere holds (an SQLite read, a test).
final class PoolExecutor: TaskExecutor {
    static let shared = PoolExecutor()
    private let queue = DispatchQueue(label: "kbtd.postgres.pool")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}
