import Foundation
import KBTDCore
import Logging
import PostgresNIO
import Synchronization

/// Keeps a node's in-memory index caught up with the commits other nodes
/// make, by polling `commit_log` every `interval` (half the configured bound).
///
/// Polling by id alone would skip a row whose transaction commits after a
/// later id was read. So every row carries its writer's transaction id
/// (`xid8`), and each poll reads the rows at or past the previous poll's
/// snapshot horizon (`pg_snapshot_xmin`: every transaction older than it had
/// finished), skips the ids this node already has (`CommitLogMarks`), and
/// moves the horizon to its own snapshot's. A commit is seen by the first
/// poll whose snapshot starts after it: the index lags by at most one interval
/// plus one poll.
public final class IndexCatchUp: Sendable {
    let database: PostgresDatabase
    let marks: CommitLogMarks
    public let interval: Duration
    let apply: @Sendable (AggregateDelta) -> Void
    /// Other nodes' spending of the day's budgets (vote ledger, new-key quotas).
    let absorb: @Sendable ([SourceLedger]) -> Void
    private let state: Mutex<State>

    struct State {
        var horizon: String
        var lastPollStart: ContinuousClock.Instant
        var lastError: String?
        var applied = 0
        var polls = 0
        var running = false
        /// Marked ids seen with a transaction id below the horizon: never returned again, forgotten.
        var seen: [Int64: ContinuousClock.Instant] = [:]
    }

    public init(database: PostgresDatabase, marks: CommitLogMarks, snapshot: IndexSnapshot, interval: Duration,
                apply: @escaping @Sendable (AggregateDelta) -> Void,
                absorb: @escaping @Sendable ([SourceLedger]) -> Void = { _ in }) {
        self.database = database
        self.marks = marks
        self.interval = interval
        self.apply = apply
        self.absorb = absorb
        for id in snapshot.included { marks.mark(id) }
        state = Mutex(State(horizon: snapshot.horizon, lastPollStart: .now))
    }

    /// Seconds since the start of the last successful poll: every commit made
    /// before then is in this node's index. `/healthz` and `/metrics` show it.
    public var lagSeconds: Double {
        let elapsed = ContinuousClock.now - state.withLock { $0.lastPollStart }
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    public var lastError: String? { state.withLock { $0.lastError } }
    /// Commits of other nodes applied since start.
    public var appliedCommits: Int { state.withLock { $0.applied } }

    /// Successful polls since start.
    public var polls: Int { state.withLock { $0.polls } }
    /// True while `run()` polls (between its start and its return).
    public var isRunning: Bool { state.withLock { $0.running } }

    /// Polls until the task is cancelled (KBTDServer runs it as a service of the
    /// app's service group, which cancels it on a graceful shutdown).
    public func run() async {
        state.withLock { $0.running = true }
        defer { state.withLock { $0.running = false } }
        while !Task.isCancelled {
            do {
                try await poll()
            } catch {
                let reason = PostgresDatabase.failure(error).description
                let changed = state.withLock { state -> Bool in
                    defer { state.lastError = reason }
                    return state.lastError != reason
                }
                if changed { database.logger.warning("index catch-up: \(reason)") }
            }
            try? await Task.sleep(for: interval)
        }
    }

    /// One poll: applies every other node's commit not applied yet.
    public func poll() async throws {
        let started = ContinuousClock.now
        let horizon = state.withLock { $0.horizon }
        let database = self.database
        let rows: (String, [(Int64, String)]) = try await database.withConnection { connection in
            let binds = SQLBinds()
            var next = horizon
            var rows: [(Int64, String)] = []
            for try await (xmin, id, delta) in try await connection.query(binds.query("""
                WITH s AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin)
                SELECT s.xmin::text, c.id, c.delta FROM s
                LEFT JOIN commit_log c ON c.xid >= \(binds(horizon))::text::xid8
                ORDER BY c.id
                """), logger: database.logger).decode((String, Int?, String?).self) {
                next = xmin
                if let id, let delta { rows.append((Int64(id), delta)) }
            }
            return (next, rows)
        }
        var applied = 0
        for (id, text) in rows.1 where marks.claim(id) {
            apply(DeltaCoding.decode(text))
            let ledgers = DeltaCoding.decodeLedgers(text)
            if !ledgers.isEmpty { absorb(ledgers) }
            applied += 1
        }
        state.withLock { state in
            if state.lastError != nil { database.logger.notice("index catch-up: reading commit_log again") }
            state.lastError = nil
            state.horizon = rows.0
            state.lastPollStart = started
            state.applied += applied
            state.polls += 1
            // Rows returned again and again while an old transaction holds the horizon back stay
            // marked; the marks of rows read in this poll are kept for an hour past their last reading.
            for (id, _) in rows.1 { state.seen[id] = started }
            let expired = state.seen.filter { started - $0.value > .seconds(3600) }.map(\.key)
            for id in expired { state.seen[id] = nil }
            if !expired.isEmpty { marks.forget(expired) }
        }
    }
}
