import Foundation
import KBTDCore
import KBTDStore
import Logging
import PostgresNIO
import Synchronization

/// `commit_log` ids whose deltas this node's index already has (its own
/// commits, and what the catch-up applied). Shared by the writer's store and
/// `IndexCatchUp`; an id is marked before its transaction commits, so the
/// catch-up never applies a node's own commit a second time.
public final class CommitLogMarks: Sendable {
    private let ids = Mutex<Set<Int64>>([])

    public init() {}

    func mark(_ id: Int64) { ids.withLock { _ = $0.insert(id) } }
    /// True when `id` was not marked yet (and marks it).
    func claim(_ id: Int64) -> Bool { ids.withLock { $0.insert(id).inserted } }
    /// Forgets ids the catch-up will never read again.
    func forget(_ gone: [Int64]) { ids.withLock { $0.subtract(gone) } }
    var count: Int { ids.withLock { $0.count } }
}

/// `TelemetryStore` on a shared PostgreSQL database, for several stateless
/// kbtd nodes. One transaction per group commit (`synchronous_commit = on`,
/// so the 202 follows a durable COMMIT): the batch ids are claimed with
/// `INSERT ... ON CONFLICT DO NOTHING` in the same transaction as the count
/// upserts (`count = count + excluded.count`), so a retry that reaches another
/// node is a duplicate and nothing is counted twice. Keys are written in one
/// fixed order, table by table, so concurrent nodes do not deadlock; a
/// deadlock or serialization failure is retried whole anyway.
///
/// The `TelemetryStore` methods block (the writer calls them on its own
/// thread); never call them on the cooperative pool.
public final class PostgresTelemetryStore: TelemetryStore, TelemetryReader {
    public let database: PostgresDatabase
    /// This node's name in `commit_log` (host and pid).
    let node: String
    let marks: CommitLogMarks
    private let admission: @Sendable () -> IndexAdmission
    /// Fingerprints of keys known to be admitted (a cache: the registry row decides).
    private var admittedKeys: Set<UInt64> = []
    /// Admitted keys whose `last_seen` this node moved to `touchedDay` (one write a key a day).
    private var touched: Set<UInt64> = []
    private var touchedDay: Int64 = -1

    /// Opens the store on `database` (migrating it when `migrate`), loading
    /// which keys are admitted. Blocking.
    ///
    /// - Parameter forWriting: false for a reader (`kbtd stats`, `/v1/stats`): skips loading the admitted keys.
    public init(database: PostgresDatabase, marks: CommitLogMarks = CommitLogMarks(), node: String? = nil,
                migrate: Bool = true, forWriting: Bool = true,
                admission: @escaping @Sendable () -> IndexAdmission = { IndexAdmission() }) throws {
        self.database = database
        self.marks = marks
        self.node = node ?? Self.defaultNodeName()
        self.admission = admission
        if migrate {
            try blocking { try await PostgresSchema.migrate(database) }
        } else {
            let version = try blocking { try await PostgresSchema.appliedVersion(database) }
            guard version > 0 else { throw PostgresDatabase.Failure(description: "not a kbtd database (no schema): \(database.url)") }
            guard version <= PostgresSchema.latestVersion else { throw PostgresSchema.NewerSchema(version: version) }
        }
        guard forWriting else { return }
        admittedKeys = try blocking {
            try await database.withConnection { connection in
                var keys: Set<UInt64> = []
                let rows = try await connection.query(
                    "SELECT \(unescaped: PostgresSQL.keyColumns) FROM keys WHERE admitted_at IS NOT NULL", logger: database.logger)
                for try await row in rows {
                    if let key = try Self.series(row) { keys.insert(key.fingerprint) }
                }
                return keys
            }
        }
    }

    /// Creates or updates the schema (ordered migrations under an advisory lock).
    public static func migrate(_ database: PostgresDatabase) async throws {
        try await PostgresSchema.migrate(database)
    }

    public typealias NewerSchema = PostgresSchema.NewerSchema

    static func defaultNodeName() -> String {
        "\(ProcessInfo.processInfo.hostName):\(getpid())"
    }

    // MARK: TelemetryStore

    struct CommitOutcome: Sendable {
        var result: CommitResult
        var admitted: Set<UInt64>
    }

    public func commit(_ batches: [PendingBatch]) throws -> CommitResult {
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
        let outcome = try blocking {
            var attempt = 0
            while true {
                attempt += 1
                do {
                    return try await Self.commitTransaction(input, database: database, marks: marks)
                } catch let failure as PostgresDatabase.Failure where failure.isRetryable && attempt < 5 {
                    database.logger.notice("commit retried after \(failure.description)")
                    continue
                } catch {
                    throw PostgresDatabase.failure(error)
                }
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
                // Claim ids in sorted order: two nodes with overlapping retries lock them alike.
                var firstIndex: [String: Int] = [:]
                for (index, batch) in input.batches.enumerated() where firstIndex[batch.batchID] == nil {
                    firstIndex[batch.batchID] = index
                }
                let unique = firstIndex.values.sorted { input.batches[$0].batchID < input.batches[$1].batchID }.map { input.batches[$0] }
                var claimed: Set<String> = []
                for try await id in try await connection.query(PostgresSQL.claimBatchIDs(unique), logger: logger).decode(String.self) {
                    claimed.insert(id)
                }
                var stored: [Bool] = []
                var added = AggregateDelta()
                var trusted: Set<SeriesKey> = []
                for (index, batch) in input.batches.enumerated() {
                    let isNew = claimed.contains(batch.batchID) && firstIndex[batch.batchID] == index
                    stored.append(isNew)
                    guard isNew else { continue }
                    added.merge(batch.delta)
                    if batch.source == .trusted { trusted.formUnion(batch.delta.seriesKeys) }
                }
                let now = input.batches.map(\.receivedAt).max() ?? 0
                try await write(added, seenAt: now, connection: connection, logger: logger)
                if !input.touch.isEmpty { try await connection.query(PostgresSQL.touchKeys(input.touch, at: now), logger: logger) }
                let (indexed, admitted, newlyAdmitted) = try await admit(added, trusted: trusted, input: input, now: now,
                                                                          connection: connection, logger: logger)
                try await writeHourlyIngest(input.batches, stored: stored, connection: connection, logger: logger)
                try await writeLedger(input.batches, stored: stored, connection: connection, logger: logger)
                // Budgets spent by untrusted batches go to the other nodes with the counts (IndexCatchUp).
                var ledgers: [Int64: SourceLedger] = [:]
                for (batch, isNew) in zip(input.batches, stored) where isNew && batch.source != .trusted {
                    let day = batch.receivedAt / 86_400
                    ledgers[day, default: SourceLedger(day: day)].votes += batch.ledger
                    if batch.newKeys > 0 { ledgers[day, default: SourceLedger(day: day)].newKeys[batch.source, default: 0] += batch.newKeys }
                }
                let spent = ledgers.keys.sorted().map { ledgers[$0]! }.filter { !$0.votes.isEmpty || !$0.newKeys.isEmpty }
                if !indexed.isEmpty || !spent.isEmpty {
                    let text = [DeltaCoding.encode(indexed), DeltaCoding.encode(spent)].filter { !$0.isEmpty }.joined(separator: "\n")
                    for try await id in try await connection.query(
                        PostgresSQL.logCommit(node: input.node, at: Int64(Date().timeIntervalSince1970), delta: text),
                        logger: logger).decode(Int.self) {
                        marks.mark(Int64(id))
                    }
                }
                return CommitOutcome(result: .of(stored: stored, added: indexed, admitted: newlyAdmitted),
                                     admitted: admitted)
            } catch {
                throw PostgresDatabase.failure(error)
            }
        }
    }

    /// Upserts every count of `delta`, table by table, keys in `SeriesKey.writeOrder`; `seenAt`
    /// (Unix seconds) is when its client networks reported their keys.
    static func write(_ delta: AggregateDelta, seenAt: Int64, connection: PostgresConnection, logger: Logger) async throws {
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
    }

    /// Registers the commit's keys and decides which reach the index, as the
    /// SQLite store does; the registry rows are locked (key order) while the
    /// decision is made, so two nodes never both admit a key (which would put
    /// its stored counts in the indexes twice).
    static func admit(_ added: AggregateDelta, trusted: Set<SeriesKey>, input: CommitInput, now: Int64,
                      connection: PostgresConnection, logger: Logger) async throws -> (AggregateDelta, Set<UInt64>, Int) {
        var pass: Set<SeriesKey> = []
        var unknown: [SeriesKey] = []
        for key in added.seriesKeys {
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
            let needCount = waiting.filter { !trusted.contains($0) }
            if !needCount.isEmpty {
                for try await row in try await connection.query(PostgresSQL.countKeySources(needCount), logger: logger) {
                    guard let key = try series(row) else { continue }
                    let values = try row.decode((String, Int, String, String, String, Int, Bool?).self)
                    sources[key] = (values.5, values.6 ?? false)
                }
            }
            var room = input.rules.maxIndexedKeys - input.admitted.count
            for key in waiting {
                let known = sources[key] ?? (0, false)
                let confirmed = trusted.contains(key) || known.trusted || known.count >= input.rules.minSources
                guard confirmed, room > 0 else { continue }
                room -= 1
                newlyAdmitted.append(key)
            }
            if !newlyAdmitted.isEmpty {
                try await connection.query(PostgresSQL.admitKeys(newlyAdmitted, at: now), logger: logger)
                for key in newlyAdmitted { admittedNow.insert(key.fingerprint) }
            }
        }
        var indexed = added.filter { pass.contains($0) }
        // Screens are counted per model, not per key: the index takes each commit's as they come.
        indexed.screens = added.screens
        if !newlyAdmitted.isEmpty {
            indexed.merge(try await readCounts(keys: newlyAdmitted, connection: connection, logger: logger))
        }
        return (indexed, admittedNow, newlyAdmitted.count)
    }

    static func writeHourlyIngest(_ batches: [PendingBatch], stored: [Bool], connection: PostgresConnection, logger: Logger) async throws {
        var hours: [Int64: (batches: Int64, samples: Int64, rejected: Int64)] = [:]
        for (batch, isNew) in zip(batches, stored) where isNew {
            let hour = batch.receivedAt / 3600 * 3600
            hours[hour, default: (0, 0, 0)].batches += 1
            hours[hour, default: (0, 0, 0)].samples += Int64(batch.accepted)
            hours[hour, default: (0, 0, 0)].rejected += Int64(batch.rejected)
        }
        guard !hours.isEmpty else { return }
        let rows = hours.sorted { $0.key < $1.key }.map { (hour: $0.key, batches: $0.value.batches, samples: $0.value.samples,
                                                          rejected: $0.value.rejected) }
        try await connection.query(PostgresSQL.upsertHourlyIngest(rows), logger: logger)
    }

    /// Persists what the commit's new batches spent of their sources' daily budgets (as
    /// `SQLiteTelemetryStore` does), deleting earlier days' rows.
    static func writeLedger(_ batches: [PendingBatch], stored: [Bool], connection: PostgresConnection, logger: Logger) async throws {
        struct RowKey: Hashable, Comparable {
            var day: Int64, source: Int64, series: Int64, bin: Int64
            static func < (a: RowKey, b: RowKey) -> Bool { (a.day, a.source, a.series, a.bin) < (b.day, b.source, b.series, b.bin) }
        }
        var votes: [RowKey: (group: Int64, reserve: Int64, votes: Int64)] = [:]
        var quotas: [RowKey: Int64] = [:]
        var days: Set<Int64> = []
        for (batch, isNew) in zip(batches, stored) where isNew && batch.source != .trusted {
            let day = batch.receivedAt / 86_400
            days.insert(day)
            for row in batch.ledger {
                let key = RowKey(day: day, source: Int64(bitPattern: row.source.value), series: Int64(bitPattern: row.key),
                                 bin: Int64(row.halfPoints))
                let reserve: Int64 = row.reserve ? 1 : 0
                votes[key, default: (Int64(bitPattern: row.group.value), reserve, 0)].votes += row.votes
            }
            if batch.newKeys > 0 {
                quotas[RowKey(day: day, source: Int64(bitPattern: batch.source.value), series: 0, bin: 0), default: 0] += Int64(batch.newKeys)
            }
        }
        guard let today = days.max() else { return }
        try await connection.query("DELETE FROM vote_ledger WHERE day < \(today)", logger: logger)
        try await connection.query("DELETE FROM key_quota WHERE day < \(today)", logger: logger)
        if !votes.isEmpty {
            let rows = votes.sorted { $0.key < $1.key }.map {
                (day: $0.key.day, source: $0.key.source, series: $0.key.series, bin: $0.key.bin,
                 group: $0.value.group, reserve: $0.value.reserve, votes: $0.value.votes)
            }
            try await connection.query(PostgresSQL.upsertLedger(rows), logger: logger)
        }
        if !quotas.isEmpty {
            let rows = quotas.sorted { $0.key < $1.key }.map { (day: $0.key.day, source: $0.key.source, created: $0.value) }
            try await connection.query(PostgresSQL.upsertQuota(rows), logger: logger)
        }
    }

    public func loadLedger(day: Int64) throws -> SourceLedger {
        let database = self.database
        return try blocking {
            try await database.withConnection { connection in
                var ledger = SourceLedger(day: day)
                for try await (source, series, bin, group, reserve, votes) in try await connection.query("""
                    SELECT source, series, height_bin, network_group, reserve, votes FROM vote_ledger WHERE day = \(day)
                    """, logger: database.logger).decode((Int64, Int64, Int64, Int64, Int64, Int64).self) {
                    ledger.votes.append(LedgerIncrement(
                        source: SourceID(UInt64(bitPattern: source)), group: SourceID(UInt64(bitPattern: group)),
                        key: UInt64(bitPattern: series), halfPoints: Int(bin), votes: votes, reserve: reserve != 0))
                }
                for try await (source, created) in try await connection.query(
                    "SELECT source, created FROM key_quota WHERE day = \(day)", logger: database.logger).decode((Int64, Int64).self) {
                    ledger.newKeys[SourceID(UInt64(bitPattern: source)), default: 0] += Int(created)
                }
                return ledger
            }
        }
    }

    public func pruneUnconfirmedKeys(firstSeenBefore cutoff: Int64, limit: Int) throws -> [SeriesKey] {
        let minSources = admission().minSources
        let database = self.database
        return try blocking {
            try await database.withTransaction { connection in
                var doomed: [SeriesKey] = []
                let b = SQLBinds()
                let sql = """
                    SELECT k.model, k.os_major, k.language, k.orientation, k.keyboard_type FROM keys k
                    WHERE k.admitted_at IS NULL AND k.first_seen < \(b(Int(cutoff)))
                    AND (SELECT COUNT(*) + COALESCE(MAX(CASE WHEN s.source = 0 THEN 1 ELSE 0 END), 0) * 1000 FROM key_sources s
                         WHERE s.model = k.model AND s.os_major = k.os_major AND s.language = k.language
                         AND s.orientation = k.orientation AND s.keyboard_type = k.keyboard_type) < \(b(minSources))
                    ORDER BY k.model, k.os_major, k.language, k.orientation, k.keyboard_type
                    LIMIT \(b(limit))
                    FOR UPDATE OF k SKIP LOCKED
                    """
                for try await row in try await connection.query(b.query(sql), logger: database.logger) {
                    if let key = try Self.series(row) { doomed.append(key) }
                }
                guard !doomed.isEmpty else { return doomed }
                var arrays = KeyArrays()
                doomed.forEach { arrays.append($0) }
                for table in ["height_counts", "animation_counts", "cold_start_counts", "safe_area_counts", "height_votes",
                              "key_sources", "keys"] {
                    let d = SQLBinds()
                    try await connection.query(d.query("""
                        DELETE FROM \(table) WHERE (\(PostgresSQL.keyColumns)) IN (SELECT * FROM unnest(\(arrays.unnestArguments(d))))
                        """), logger: database.logger)
                }
                return doomed
            }
        }
    }

    /// In slices of 5,000 rows, skipping rows a commit holds (never waiting on one, so never
    /// deadlocking with a node's commit): a skipped row retires at the next pass.
    public func retireSources(seenBefore cutoff: Int64) throws -> Int {
        let database = self.database
        return try blocking {
            var total = 0
            while true {
                let retired = try await database.withConnection { connection in
                    let b = SQLBinds()
                    var count = 0
                    for try await value in try await connection.query(b.query("""
                        WITH doomed AS (
                            SELECT model, os_major, language, orientation, keyboard_type, source FROM key_sources
                            WHERE source > 0 AND COALESCE(seen_at, 0) < \(b(Int(cutoff)))
                            LIMIT 5000 FOR UPDATE SKIP LOCKED),
                        retired AS (
                            UPDATE key_sources k SET source = \(PostgresSQL.retiredSource), seen_at = NULL FROM doomed d
                            WHERE k.model = d.model AND k.os_major = d.os_major AND k.language = d.language
                              AND k.orientation = d.orientation AND k.keyboard_type = d.keyboard_type AND k.source = d.source
                            RETURNING 1)
                        SELECT COUNT(*)::bigint FROM retired
                        """), logger: database.logger).decode(Int.self) {
                        count = value
                    }
                    return count
                }
                total += retired
                if retired < 5000 { return total }
            }
        }
    }

    /// Deletes keys without trusted data idle since `cutoff`, as the SQLite
    /// store does. This node's index drops them (the writer's `onForget`);
    /// other nodes' indexes keep serving them until those nodes restart.
    public func pruneIdleKeys(lastSeenBefore cutoff: Int64, limit: Int) throws -> [SeriesKey] {
        let database = self.database
        let doomed: [SeriesKey] = try blocking {
            try await database.withTransaction { connection in
                var doomed: [SeriesKey] = []
                let b = SQLBinds()
                let sql = """
                    SELECT k.model, k.os_major, k.language, k.orientation, k.keyboard_type FROM keys k
                    WHERE k.last_seen < \(b(Int(cutoff)))
                    AND NOT EXISTS (SELECT 1 FROM key_sources s
                         WHERE s.model = k.model AND s.os_major = k.os_major AND s.language = k.language
                         AND s.orientation = k.orientation AND s.keyboard_type = k.keyboard_type AND s.source = 0)
                    ORDER BY k.model, k.os_major, k.language, k.orientation, k.keyboard_type
                    LIMIT \(b(limit))
                    FOR UPDATE OF k SKIP LOCKED
                    """
                for try await row in try await connection.query(b.query(sql), logger: database.logger) {
                    if let key = try Self.series(row) { doomed.append(key) }
                }
                guard !doomed.isEmpty else { return doomed }
                var arrays = KeyArrays()
                doomed.forEach { arrays.append($0) }
                for table in ["height_counts", "animation_counts", "cold_start_counts", "safe_area_counts", "height_votes",
                              "key_sources", "keys"] {
                    let d = SQLBinds()
                    try await connection.query(d.query("""
                        DELETE FROM \(table) WHERE (\(PostgresSQL.keyColumns)) IN (SELECT * FROM unnest(\(arrays.unnestArguments(d))))
                        """), logger: database.logger)
                }
                return doomed
            }
        }
        for key in doomed { admittedKeys.remove(key.fingerprint) }
        return doomed
    }

    /// PostgreSQL manages its own write-ahead log: nothing to checkpoint here.
    public func checkpointIfLarge(limit: Int64) -> Int64 { 0 }

    /// Forgets batch ids (and hourly counts) past retention, and `commit_log`
    /// rows older than an hour (every node has read them by then; a node that
    /// was away longer reloads its index from the tables when it starts).
    public func pruneBatchIDs(receivedBefore cutoff: Int64) throws -> Int {
        let database = self.database
        let now = Int(Date().timeIntervalSince1970)
        return try blocking {
            try await database.withConnection { connection in
                var removed = 0
                let b = SQLBinds()
                for try await count in try await connection.query(b.query("""
                    WITH gone AS (DELETE FROM batches WHERE received_at < \(b(Int(cutoff))) RETURNING 1) SELECT COUNT(*)::bigint FROM gone
                    """), logger: database.logger).decode(Int.self) {
                    removed = count
                }
                let h = SQLBinds()
                try await connection.query(h.query("DELETE FROM hourly_ingest WHERE hour + 3600 <= \(h(Int(cutoff)))"),
                                           logger: database.logger)
                let c = SQLBinds()
                try await connection.query(c.query("DELETE FROM commit_log WHERE created_at < \(c(now - 3600))"), logger: database.logger)
                return removed
            }
        }
    }

    public func batchIDCount() throws -> Int {
        let database = self.database
        return try blocking {
            try await database.withConnection { connection in
                var count = 0
                for try await value in try await connection.query("SELECT COUNT(*)::bigint FROM batches", logger: database.logger)
                    .decode(Int.self) {
                    count = value
                }
                return count
            }
        }
    }

    static func series(_ row: PostgresRow) throws -> SeriesKey? {
        var cells = row.makeIterator()
        let model = try cells.next()!.decode(String.self)
        let osMajor = try cells.next()!.decode(Int.self)
        let language = try cells.next()!.decode(String.self)
        guard let orientation = Orientation(rawValue: try cells.next()!.decode(String.self)) else { return nil }
        let keyboardType = try cells.next()!.decode(String.self)
        return SeriesKey(model: model, osMajor: osMajor, language: language, orientation: orientation, keyboardType: keyboardType)
    }
}
