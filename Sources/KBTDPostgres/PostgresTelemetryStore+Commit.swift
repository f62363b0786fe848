import Foundation
import KBTDCore
import KBTDStore
import Logging
import PostgresNIO
import Synchronization

/// One group commit in one transaction: batch ids, counts, votes, sources, key admission.
extension PostgresTelemetryStore {
    // MARK: TelemetryStore

    struct CommitOutcome: Sendable {
        var result: CommitResult
        var admitted: Set<UInt64>
    }

    public func commit(_ batches: [PendingBatch]) async throws -> CommitResult {
        let now = batches.map(\.receivedAt).max() ?? 0
        if now / 86_400 != touchedDay {
            touched = []
            touchedDay = now / 86_400
        }
        var touch: [SeriesKey] = []
        for batch in batches {
            for key in batch.delta.seriesKeys where admittedKeys.contains(key.fingerprint) && !touched.contains(key.fingerprint) {
                touch.append(key)
            }
        }
        touch = Array(Set(touch)).sorted(by: SeriesKey.writeOrder)
        let input = CommitInput(batches: batches, admitted: admittedKeys, rules: admission(), node: node, touch: touch)
        let database = self.database, marks = self.marks
        var attempt = 0
        let outcome: CommitOutcome
        while true {
            attempt += 1
            do {
                outcome = try await Self.commitTransaction(input, database: database, marks: marks)
                break
            } catch let failure as PostgresDatabase.Failure where failure.isRetryable && attempt < 5 {
                database.logger.notice("commit retried after \(failure.description)")
                continue
            } catch {
                throw PostgresDatabase.failure(error)
            }
        }
        admittedKeys.formUnion(outcome.admitted)
        for key in touch { touched.insert(key.fingerprint) }
        return outcome.result
    }

    struct CommitInput: Sendable {
        var batches: [PendingBatch]
        var admitted: Set<UInt64>
        var rules: IndexAdmission
        var node: String
        /// Admitted keys whose `last_seen` moves today (key order).
        var touch: [SeriesKey] = []
    }

    static func commitTransaction(_ input: CommitInput, database: PostgresDatabase, marks: CommitLogMarks) async throws -> CommitOutcome {
        // A group commit takes milliseconds; one that has not answered in 10 s is given up (its
        // connection closed, so an unfinished transaction rolls back) and its batches answered 503.
        try await database.withTransaction(deadline: .seconds(10)) { connection in
            let logger = database.logger
            do {
                try await connection.query("SET LOCAL synchronous_commit = on", logger: logger)
                var plan = CommitPlan(input.batches)
                var claimed: Set<String> = []
                for try await id in try await connection.query(PostgresSQL.claimBatchIDs(plan.claims), logger: logger).decode(String.self) {
                    claimed.insert(id)
                }
                plan.settle(claimed: claimed)
                return try await apply(plan, input: input, marks: marks, connection: connection, logger: logger)
            } catch {
                throw PostgresDatabase.failure(error)
            }
        }
    }

    /// Writes a settled commit's decisions inside the commit's transaction: the counts, the
    /// keys' admission, the hours' ingest counts, the day's budgets, and the `commit_log` row
    /// the other nodes catch up from.
    static func apply(_ plan: CommitPlan, input: CommitInput, marks: CommitLogMarks, connection: PostgresConnection,
                      logger: Logger) async throws -> CommitOutcome {
        let written = try await write(plan.added, seenAt: plan.now, connection: connection, logger: logger)
        if !input.touch.isEmpty { try await connection.query(PostgresSQL.touchKeys(input.touch, at: plan.now), logger: logger) }
        let (indexed, admitted, newlyAdmitted) = try await admit(plan, input: input, newReleaseSources: written.releases,
                                                                 newScreenSources: written.screens, connection: connection, logger: logger)
        try await writeHourlyIngest(plan.hourlyIngest, connection: connection, logger: logger)
        let spent = plan.ledgers
        try await writeLedger(spent, connection: connection, logger: logger)
        // Budgets spent by untrusted batches go to the other nodes with the counts (IndexCatchUp).
        let shared = spent.filter { !$0.votes.isEmpty || !$0.newKeys.isEmpty }
        if !indexed.isEmpty || !shared.isEmpty {
            let text = [DeltaCoding.encode(indexed), DeltaCoding.encode(shared)].filter { !$0.isEmpty }.joined(separator: "\n")
            for try await id in try await connection.query(
                PostgresSQL.logCommit(node: input.node, at: Int64(Date().timeIntervalSince1970), delta: text),
                logger: logger).decode(Int.self) {
                marks.mark(Int64(id))
            }
        }
        return CommitOutcome(result: .of(stored: plan.stored, added: indexed, admitted: newlyAdmitted), admitted: admitted)
    }

    /// Upserts every count of `delta`, table by table, keys in `SeriesKey.writeOrder`; `seenAt`
    /// (Unix seconds) is when its client networks reported their keys. Returns the release and
    /// screen sources stored for the first time (what the index counts, `CommitPlan.indexDelta`).
    @discardableResult
    static func write(_ delta: AggregateDelta, seenAt: Int64, connection: PostgresConnection, logger: Logger) async throws
        -> (releases: [ReleaseKey: Set<SourceID>], screens: [ScreenVariantKey: Set<SourceID>]) {
        func order<K>(_ rows: [(K, Int64)], _ series: (K) -> SeriesKey, _ tail: (K, K) -> Bool) -> [(K, Int64)] {
            rows.sorted { a, b in
                let (sa, sb) = (series(a.0), series(b.0))
                if sa != sb { return SeriesKey.writeOrder(sa, sb) }
                return tail(a.0, b.0)
            }
        }
        if !delta.heights.isEmpty {
            let rows = order(delta.heights.map { ($0.key, $0.value) }, \.series) {
                ($0.placement.rawValue, $0.halfPoints) < ($1.placement.rawValue, $1.halfPoints)
            }
            try await connection.query(PostgresSQL.upsertHeightCounts(rows), logger: logger)
        }
        if !delta.animations.isEmpty {
            let rows = order(delta.animations.map { ($0.key, $0.value) }, \.series) {
                ($0.event.rawValue, $0.bin.durationMs, $0.bin.curve) < ($1.event.rawValue, $1.bin.durationMs, $1.bin.curve)
            }
            try await connection.query(PostgresSQL.upsertAnimationCounts(rows), logger: logger)
        }
        if !delta.coldStarts.isEmpty {
            let rows = order(delta.coldStarts.map { ($0.key, $0.value) }, \.series) {
                ($0.preloaded ? 1 : 0, $0.bucket) < ($1.preloaded ? 1 : 0, $1.bucket)
            }
            try await connection.query(PostgresSQL.upsertColdStartCounts(rows), logger: logger)
        }
        if !delta.safeAreas.isEmpty {
            let rows = order(delta.safeAreas.map { ($0.key, $0.value) }, \.series) { $0.halfPoints < $1.halfPoints }
            try await connection.query(PostgresSQL.upsertSeriesBins(rows, table: "safe_area_counts", bin: "safe_area_bin", count: "count"),
                                       logger: logger)
        }
        if !delta.votes.isEmpty {
            let rows = order(delta.votes.map { ($0.key, $0.value) }, \.series) { $0.halfPoints < $1.halfPoints }
            try await connection.query(PostgresSQL.upsertSeriesBins(rows, table: "height_votes", bin: "height_bin", count: "votes"),
                                       logger: logger)
        }
        if !delta.sources.isEmpty {
            var rows: [(SeriesKey, SourceID)] = []
            for key in delta.sources.keys.sorted(by: SeriesKey.writeOrder) {
                for id in delta.sources[key]!.sorted() { rows.append((key, id)) }
            }
            try await connection.query(PostgresSQL.insertKeySources(rows, seenAt: seenAt), logger: logger)
        }
        if !delta.screens.isEmpty {
            let rows = delta.screens.map { ($0.key, $0.value) }.sorted {
                ($0.0.model, $0.0.screen.description) < ($1.0.model, $1.0.screen.description)
            }
            try await connection.query(PostgresSQL.upsertModelScreens(rows), logger: logger)
        }
        let releases = try await writeVariants(PostgresSQL.releases, of: delta, seenAt: seenAt, connection: connection, logger: logger)
        let screens = try await writeVariants(PostgresSQL.screens, of: delta, seenAt: seenAt, connection: connection, logger: logger)
        if !delta.dayVotes.isEmpty {
            try await connection.query(PostgresSQL.upsertDayVotes(delta.dayVotes.sorted { $0.key < $1.key }), logger: logger)
        }
        if !delta.daySources.isEmpty {
            var rows: [(DayKey, SourceID)] = []
            for (day, ids) in delta.daySources {
                for id in ids { rows.append((day, id)) }
            }
            // The writers' lock order (keys in `writeOrder`), then day and source.
            rows.sort { a, b in
                if a.0.series != b.0.series { return SeriesKey.writeOrder(a.0.series, b.0.series) }
                return (a.0.day, a.1) < (b.0.day, b.1)
            }
            try await connection.query(PostgresSQL.insertDaySources(rows), logger: logger)
        }
        return (releases, screens)
    }

    /// Registers the commit's keys and decides which reach the index with the
    /// SQLite store's rule (`IndexAdmission.confirms`, then `IndexedKeys.fill`:
    /// the room left under `max_indexed_keys`, as this node knows the admitted
    /// keys, filled strongest first; a full index displaces nothing here yet).
    /// The registry rows are locked (key order) while the decision is made, so
    /// two nodes never both admit a key (which would put its stored counts in
    /// the indexes twice).
    static func admit(_ plan: CommitPlan, input: CommitInput, newReleaseSources: [ReleaseKey: Set<SourceID>],
                      newScreenSources: [ScreenVariantKey: Set<SourceID>], connection: PostgresConnection,
                      logger: Logger) async throws -> (AggregateDelta, Set<UInt64>, Int) {
        let (now, trusted) = (plan.now, plan.trustedKeys)
        var pass: Set<SeriesKey> = []
        var unknown: [SeriesKey] = []
        for key in plan.addedKeys {
            if input.admitted.contains(key.fingerprint) { pass.insert(key) } else { unknown.append(key) }
        }
        unknown.sort(by: SeriesKey.writeOrder)
        var admittedNow: Set<UInt64> = []
        var newlyAdmitted: [SeriesKey] = []
        if !unknown.isEmpty {
            try await connection.query(PostgresSQL.registerKeys(unknown, firstSeen: now), logger: logger)
            var waiting: [SeriesKey] = []
            for try await row in try await connection.query(PostgresSQL.lockKeys(unknown), logger: logger) {
                guard let key = try series(row) else { continue }
                if try row.decode((String, Int, String, String, String, Bool).self).5 {
                    // Another node admitted it: pass this commit's counts, as for a cached key.
                    pass.insert(key)
                    admittedNow.insert(key.fingerprint)
                } else {
                    waiting.append(key)
                }
            }
            var sources: [SeriesKey: (count: Int, trusted: Bool)] = [:]
            if !waiting.isEmpty {
                for try await row in try await connection.query(PostgresSQL.countKeySources(waiting), logger: logger) {
                    guard let key = try series(row) else { continue }
                    let values = try row.decode((String, Int, String, String, String, Int, Bool?).self)
                    sources[key] = (values.5, values.6 ?? false)
                }
            }
            let day = now / 86_400
            let candidates = waiting.compactMap { key -> (SeriesKey, KeySupport)? in
                let known = sources[key] ?? (0, false)
                let support = KeySupport(trusted: trusted.contains(key) || known.trusted, sources: known.count, lastSeenDay: day)
                return input.rules.confirms(support) ? (key, support) : nil
            }
            newlyAdmitted = IndexedKeys.fill(candidates, indexed: input.admitted.count, capacity: input.rules.maxIndexedKeys)
                .entering.map(\.0).sorted(by: SeriesKey.writeOrder)
            if !newlyAdmitted.isEmpty {
                try await connection.query(PostgresSQL.admitKeys(newlyAdmitted, at: now), logger: logger)
                for key in newlyAdmitted { admittedNow.insert(key.fingerprint) }
            }
        }
        var indexed = plan.indexDelta(passing: pass, newReleaseSources: newReleaseSources, newScreenSources: newScreenSources)
        if !newlyAdmitted.isEmpty {
            indexed.merge(try await readCounts(keys: newlyAdmitted, connection: connection, logger: logger))
        }
        return (indexed, admittedNow, newlyAdmitted.count)
    }
}
