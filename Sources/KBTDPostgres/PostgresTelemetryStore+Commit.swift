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
        /// The index's decisions, applied to `indexed` once the transaction committed.
        var review: IndexedKeys.Review
        var placement: IndexedKeys.Placement
        /// Keys another node admitted, met by this commit, with their support.
        var joined: [(SeriesKey, KeySupport)]
    }

    public func commit(_ batches: [PendingBatch]) async throws -> CommitResult {
        let outcome: CommitOutcome
        do {
            // `input` shares `indexed`'s storage: it ends with this block, before `indexed` changes
            // (else the changes below would copy every key).
            let input = CommitInput(batches: batches, indexed: indexed, rules: admission(), node: node)
            let database = self.database, marks = self.marks
            var attempt = 0
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
        }
        // Decided inside the transaction (a retry decides again), applied once it committed.
        indexed.apply(outcome.review)
        for (key, support) in outcome.joined { indexed.insert(key, support: support) }
        indexed.apply(outcome.placement)
        return outcome.result
    }

    struct CommitInput: Sendable {
        var batches: [PendingBatch]
        /// The writer's index of keys as the commit starts (read only: copying it is free).
        var indexed: IndexedKeys
        var rules: IndexAdmission
        var node: String
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
        let admission = try await admit(plan, input: input, written: written, connection: connection, logger: logger)
        let indexed = admission.0
        var outcome = admission.1
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
        outcome.result = .of(stored: plan.stored, added: indexed, admitted: outcome.placement.admitted.count)
        outcome.result.evicted = outcome.placement.evicted
        return outcome
    }

    /// What a commit's `write` took in: per key, the sources `key_sources` stored for the first time
    /// (and whether one is a trusted peer); per (key, release), the sources `release_sources` added.
    struct WrittenSources: Sendable {
        var keys: [SeriesKey: (count: Int, trusted: Bool)] = [:]
        var releases: [ReleaseKey: Set<SourceID>] = [:]
        var screens: [ScreenVariantKey: Set<SourceID>] = [:]
    }

    /// Upserts every count of `delta`, table by table, keys in `SeriesKey.writeOrder`; `seenAt`
    /// (Unix seconds) is when its client networks reported their keys. Returns the sources
    /// stored for the first time (what the index counts: `IndexedKeys.review`, `CommitPlan.indexDelta`).
    @discardableResult
    static func write(_ delta: AggregateDelta, seenAt: Int64, connection: PostgresConnection,
                      logger: Logger) async throws -> WrittenSources {
        var written = WrittenSources()
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
            for try await (m, o, l, r, k, source, inserted) in try await connection.query(
                PostgresSQL.insertKeySources(rows, seenAt: seenAt), logger: logger)
                .decode((String, Int, String, String, String, Int, Bool).self) where inserted {
                guard let key = series(m, o, l, r, k) else { continue }
                written.keys[key, default: (0, false)].count += 1
                if source == 0 { written.keys[key, default: (0, false)].trusted = true }
            }
        }
        if !delta.screens.isEmpty {
            let rows = delta.screens.map { ($0.key, $0.value) }.sorted {
                ($0.0.model, $0.0.screen.description) < ($1.0.model, $1.0.screen.description)
            }
            try await connection.query(PostgresSQL.upsertModelScreens(rows), logger: logger)
        }
        written.releases = try await writeVariants(PostgresSQL.releases, of: delta, seenAt: seenAt, connection: connection, logger: logger)
        written.screens = try await writeVariants(PostgresSQL.screens, of: delta, seenAt: seenAt, connection: connection, logger: logger)
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
        return written
    }

    /// Registers the commit's keys and writes what the index decides (`IndexedKeys.review`, then
    /// `admit`), as the SQLite store does: admitted keys pass their counts and move `last_seen` on
    /// a new UTC day; a key not admitted enters once confirmed, while the index has room or else in
    /// place of the weakest indexed key it has more support than (marked not admitted, its counts
    /// kept). The index is this node's (`indexed`), checked against the registry: every key of the
    /// commit has its row locked (key order) while the decision is made, so two nodes never both
    /// admit a key (which would put its stored counts in the indexes twice), a key another node
    /// admitted joins this node's index with its counts passing, and a key another node displaced
    /// leaves it (its counts no longer pass) and is a candidate again.
    static func admit(_ plan: CommitPlan, input: CommitInput, written: WrittenSources,
                      connection: PostgresConnection, logger: Logger) async throws -> (AggregateDelta, CommitOutcome) {
        let now = plan.now
        var review = input.indexed.review(plan.addedKeys, newSources: written.keys, trusted: plan.trustedKeys, now: now)
        if !review.touched.isEmpty {
            try await connection.query(PostgresSQL.touchKeys(review.touched.sorted(by: SeriesKey.writeOrder), at: now), logger: logger)
        }
        if !review.unindexed.isEmpty {
            try await connection.query(PostgresSQL.registerKeys(review.unindexed.sorted(by: SeriesKey.writeOrder), firstSeen: now),
                                       logger: logger)
        }
        var admittedNow: Set<SeriesKey> = []
        if !plan.addedKeys.isEmpty {
            for try await row in try await connection.query(PostgresSQL.lockKeys(plan.addedKeys.sorted(by: SeriesKey.writeOrder)),
                                                            logger: logger) {
                guard let key = try series(row) else { continue }
                if try row.decode((String, Int, String, String, String, Bool).self).5 { admittedNow.insert(key) }
            }
        }
        // Where this node's index and the registry differ, another node moved the key.
        let gone = review.passing.filter { !admittedNow.contains($0) }
        let joining = review.unindexed.filter { admittedNow.contains($0) }
        var stored: [SeriesKey: (sources: Int, trusted: Bool)] = [:]
        let asked = (review.unindexed + gone).sorted(by: SeriesKey.writeOrder)
        if !asked.isEmpty {
            for try await row in try await connection.query(PostgresSQL.countKeySources(asked), logger: logger) {
                guard let key = try series(row) else { continue }
                let values = try row.decode((String, Int, String, String, String, Int, Bool?).self)
                stored[key] = (values.5, values.6 ?? false)
            }
        }
        var joined: [(SeriesKey, KeySupport)] = []
        for key in joining {
            let held = stored[key] ?? (0, false)
            joined.append((key, review.support(of: key, sources: held.sources, trusted: held.trusted)))
        }
        var view = input.indexed
        if !gone.isEmpty || !joining.isEmpty {
            // Rare (nodes moved the same keys): this copy of the index is the commit's own.
            for key in gone { view.remove(key) }
            for (key, support) in joined { view.insert(key, support: support) }
            review.passing = review.passing.filter { admittedNow.contains($0) } + joining
            review.unindexed = review.unindexed.filter { !admittedNow.contains($0) } + gone
        }
        var placement = view.admit(review, stored: stored, rules: input.rules)
        if !placement.evicted.isEmpty {
            try await connection.query(PostgresSQL.evictKeys(placement.evicted.sorted(by: SeriesKey.writeOrder)), logger: logger)
        }
        let admitted = placement.admitted.map(\.key).sorted(by: SeriesKey.writeOrder)
        if !admitted.isEmpty {
            try await connection.query(PostgresSQL.admitKeys(admitted, at: now), logger: logger)
        }
        var indexed = plan.indexDelta(passing: Set(review.passing), newReleaseSources: written.releases, newScreenSources: written.screens)
        if !admitted.isEmpty {
            indexed.merge(try await readCounts(keys: admitted, connection: connection, logger: logger))
        }
        // This node's in-memory index drops what another node displaced, with what this commit did.
        placement.evicted = gone + placement.evicted
        return (indexed, CommitOutcome(result: .of(stored: plan.stored, added: AggregateDelta(), admitted: 0),
                                       review: review, placement: placement, joined: joined))
    }
}
