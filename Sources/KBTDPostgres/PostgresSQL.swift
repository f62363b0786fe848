import KBTDCore
import KBTDStore
import PostgresNIO

/// Builds a statement's `$n` parameters as the SQL text is written. A class:
/// `b.query("... \(b(x)) ...")` must see the binds its own argument appended.
final class SQLBinds {
    var binds = PostgresBindings()

    init() {}

    /// Appends `value` and returns its placeholder (`$3`).
    func callAsFunction<Value: PostgresDynamicTypeEncodable>(_ value: Value) -> String {
        binds.append(value)
        return "$\(binds.count)"
    }

    func query(_ sql: String) -> PostgresQuery { PostgresQuery(unsafeSQL: sql, binds: binds) }
}

/// Key columns as parallel arrays, for `unnest(...)` statements: one round
/// trip per table however many keys a commit touches.
struct KeyArrays {
    var models: [String] = []
    var osMajors: [Int] = []
    var languages: [String] = []
    var orientations: [String] = []
    var keyboardTypes: [String] = []

    mutating func append(_ key: SeriesKey) {
        models.append(key.model)
        osMajors.append(key.osMajor)
        languages.append(key.language)
        orientations.append(key.orientation.rawValue)
        keyboardTypes.append(key.keyboardType)
    }

    var count: Int { models.count }

    /// `$1::text[], $2::int[], ...` for the five key columns.
    func unnestArguments(_ binds: SQLBinds) -> String {
        "\(binds(models))::text[], \(binds(osMajors))::int[], \(binds(languages))::text[], \(binds(orientations))::text[], \(binds(keyboardTypes))::text[]"
    }
}

extension SeriesKey {
    /// The one order every node writes keys in, so that two nodes committing
    /// overlapping keys take their row locks in the same order (no deadlock).
    static func writeOrder(_ a: SeriesKey, _ b: SeriesKey) -> Bool {
        if a.model != b.model { return a.model < b.model }
        if a.osMajor != b.osMajor { return a.osMajor < b.osMajor }
        if a.language != b.language { return a.language < b.language }
        if a.orientation != b.orientation { return a.orientation.rawValue < b.orientation.rawValue }
        return a.keyboardType < b.keyboardType
    }
}

/// Every SQL statement of the PostgreSQL store, named by what it does.
enum PostgresSQL {
    static let keyColumns = "model, os_major, language, orientation, keyboard_type"
    static let keyAlias = "u(model, os_major, language, orientation, keyboard_type)"

    /// Claims batch ids; returns the ones this transaction inserted (the rest were stored before).
    static func claimBatchIDs(_ batches: [PendingBatch]) -> PostgresQuery {
        let b = SQLBinds()
        let sql = """
            INSERT INTO batches(batch_id, received_at, model, os, accepted, rejected)
            SELECT * FROM unnest(\(b(batches.map(\.batchID)))::text[], \(b(batches.map { Int($0.receivedAt) }))::bigint[],
                                 \(b(batches.map(\.model)))::text[], \(b(batches.map(\.os)))::text[],
                                 \(b(batches.map(\.accepted)))::bigint[], \(b(batches.map(\.rejected)))::bigint[])
            ON CONFLICT DO NOTHING RETURNING batch_id
            """
        return b.query(sql)
    }

    static func upsertHeightCounts(_ rows: [(HeightCountKey, Int64)]) -> PostgresQuery {
        var keys = KeyArrays(), placements: [String] = [], bins: [Double] = [], counts: [Int] = []
        for (key, count) in rows {
            keys.append(key.series); placements.append(key.placement.rawValue)
            bins.append(HeightBin.points(key.halfPoints)); counts.append(Int(count))
        }
        let b = SQLBinds()
        let sql = """
            INSERT INTO height_counts(\(keyColumns), placement, height_bin, count)
            SELECT * FROM unnest(\(keys.unnestArguments(b)), \(b(placements))::text[], \(b(bins))::float8[], \(b(counts))::bigint[])
            ON CONFLICT (\(keyColumns), placement, height_bin) DO UPDATE SET count = height_counts.count + excluded.count
            """
        return b.query(sql)
    }

    static func upsertAnimationCounts(_ rows: [(AnimationCountKey, Int64)]) -> PostgresQuery {
        var keys = KeyArrays(), events: [String] = [], durations: [Int] = [], curves: [Int] = [], counts: [Int] = []
        for (key, count) in rows {
            keys.append(key.series); events.append(key.event.rawValue)
            durations.append(key.bin.durationMs); curves.append(key.bin.curve); counts.append(Int(count))
        }
        let b = SQLBinds()
        let sql = """
            INSERT INTO animation_counts(\(keyColumns), event, duration_ms, curve, count)
            SELECT * FROM unnest(\(keys.unnestArguments(b)), \(b(events))::text[], \(b(durations))::int[], \(b(curves))::int[],
                                 \(b(counts))::bigint[])
            ON CONFLICT (\(keyColumns), event, duration_ms, curve) DO UPDATE SET count = animation_counts.count + excluded.count
            """
        return b.query(sql)
    }

    static func upsertColdStartCounts(_ rows: [(ColdStartCountKey, Int64)]) -> PostgresQuery {
        var keys = KeyArrays(), preloaded: [Int] = [], buckets: [Int] = [], values: [Double] = [], counts: [Int] = []
        for (key, count) in rows {
            keys.append(key.series); preloaded.append(key.preloaded ? 1 : 0); buckets.append(key.bucket)
            values.append(LogBucket.value(key.bucket)); counts.append(Int(count))
        }
        let b = SQLBinds()
        let sql = """
            INSERT INTO cold_start_counts(\(keyColumns), preloaded, bucket, bucket_ms, count)
            SELECT * FROM unnest(\(keys.unnestArguments(b)), \(b(preloaded))::int[], \(b(buckets))::int[], \(b(values))::float8[],
                                 \(b(counts))::bigint[])
            ON CONFLICT (\(keyColumns), preloaded, bucket) DO UPDATE SET count = cold_start_counts.count + excluded.count
            """
        return b.query(sql)
    }

    /// Safe-area counts (`column` = safe_area_bin) or estimator votes (height_votes).
    static func upsertSeriesBins(_ rows: [(SeriesBin, Int64)], table: String, bin: String, count: String) -> PostgresQuery {
        var keys = KeyArrays(), bins: [Double] = [], counts: [Int] = []
        for (key, value) in rows {
            keys.append(key.series); bins.append(HeightBin.points(key.halfPoints)); counts.append(Int(value))
        }
        let b = SQLBinds()
        let sql = """
            INSERT INTO \(table)(\(keyColumns), \(bin), \(count))
            SELECT * FROM unnest(\(keys.unnestArguments(b)), \(b(bins))::float8[], \(b(counts))::bigint[])
            ON CONFLICT (\(keyColumns), \(bin)) DO UPDATE SET \(count) = \(table).\(count) + excluded.\(count)
            """
        return b.query(sql)
    }

    /// Remembers up to 8 sources per key: enough to tell one source from several.
    /// A source already remembered only has its last-seen time moved on; only a
    /// network's keyed hash has one (`seenAt`; trusted and retired rows never expire).
    /// Returns each row written and whether it was inserted (`xmax = 0`: a row no update
    /// locked), so the index counts the new sources as SQLite's does.
    static func insertKeySources(_ rows: [(SeriesKey, SourceID)], seenAt: Int64) -> PostgresQuery {
        var keys = KeyArrays(), sources: [Int] = [], seen: [Int] = []
        for (key, source) in rows {
            keys.append(key); sources.append(Int(Int64(bitPattern: source.value)))
            seen.append(source.isNetworkHash ? Int(seenAt) : -1)
        }
        let b = SQLBinds()
        let sql = """
            INSERT INTO key_sources(\(keyColumns), source, seen_at)
            SELECT u.model, u.os_major, u.language, u.orientation, u.keyboard_type, u.source, NULLIF(u.seen_at, -1)
            FROM unnest(\(keys.unnestArguments(b)), \(b(sources))::bigint[], \(b(seen))::bigint[])
                AS u(model, os_major, language, orientation, keyboard_type, source, seen_at)
            WHERE (SELECT COUNT(*) FROM key_sources s WHERE s.model = u.model AND s.os_major = u.os_major
                   AND s.language = u.language AND s.orientation = u.orientation AND s.keyboard_type = u.keyboard_type
                   AND s.source <> u.source) < 8
            ON CONFLICT (\(keyColumns), source) DO UPDATE SET seen_at = GREATEST(key_sources.seen_at, excluded.seen_at)
            RETURNING \(keyColumns), source, xmax = 0
            """
        return b.query(sql)
    }

    /// A random retired identifier (`SourceID`): negative, odd, never derived from an address.
    static let retiredSource = "-((('x' || substr(md5(random()::text), 1, 16))::bit(64)::bigint & 9223372036854775807) | 1)"

    static func upsertModelScreens(_ rows: [(ModelScreenKey, Int64)]) -> PostgresQuery {
        let b = SQLBinds()
        let sql = """
            INSERT INTO model_screens(model, screen, count)
            SELECT * FROM unnest(\(b(rows.map(\.0.model)))::text[], \(b(rows.map { $0.0.screen.description }))::text[],
                                 \(b(rows.map { Int($0.1) }))::bigint[])
            ON CONFLICT (model, screen) DO UPDATE SET count = model_screens.count + excluded.count
            """
        return b.query(sql)
    }

    static func upsertHourlyIngest(_ rows: [(hour: Int64, batches: Int64, samples: Int64, rejected: Int64)]) -> PostgresQuery {
        let b = SQLBinds()
        let sql = """
            INSERT INTO hourly_ingest(hour, batches, samples, rejected)
            SELECT * FROM unnest(\(b(rows.map { Int($0.hour) }))::bigint[], \(b(rows.map { Int($0.batches) }))::bigint[],
                                 \(b(rows.map { Int($0.samples) }))::bigint[], \(b(rows.map { Int($0.rejected) }))::bigint[])
            ON CONFLICT (hour) DO UPDATE SET batches = hourly_ingest.batches + excluded.batches,
                samples = hourly_ingest.samples + excluded.samples, rejected = hourly_ingest.rejected + excluded.rejected
            """
        return b.query(sql)
    }

    /// Ledger rows, one per (day, source, series, height_bin): callers sum duplicates first
    /// (one statement may not update a row twice) and sort them (nodes lock rows alike).
    static func upsertLedger(_ rows: [(day: Int64, source: Int64, series: Int64, bin: Int64, group: Int64, reserve: Int64, votes: Int64)])
        -> PostgresQuery {
        let b = SQLBinds()
        let sql = """
            INSERT INTO vote_ledger(day, source, series, height_bin, network_group, reserve, votes)
            SELECT * FROM unnest(\(b(rows.map { Int($0.day) }))::bigint[], \(b(rows.map { Int($0.source) }))::bigint[],
                                 \(b(rows.map { Int($0.series) }))::bigint[], \(b(rows.map { Int($0.bin) }))::bigint[],
                                 \(b(rows.map { Int($0.group) }))::bigint[], \(b(rows.map { Int($0.reserve) }))::bigint[],
                                 \(b(rows.map { Int($0.votes) }))::bigint[])
            ON CONFLICT (day, source, series, height_bin) DO UPDATE SET votes = vote_ledger.votes + excluded.votes
            """
        return b.query(sql)
    }

    static func upsertQuota(_ rows: [(day: Int64, source: Int64, created: Int64)]) -> PostgresQuery {
        let b = SQLBinds()
        let sql = """
            INSERT INTO key_quota(day, source, created)
            SELECT * FROM unnest(\(b(rows.map { Int($0.day) }))::bigint[], \(b(rows.map { Int($0.source) }))::bigint[],
                                 \(b(rows.map { Int($0.created) }))::bigint[])
            ON CONFLICT (day, source) DO UPDATE SET created = key_quota.created + excluded.created
            """
        return b.query(sql)
    }

    static func registerKeys(_ keys: [SeriesKey], firstSeen: Int64) -> PostgresQuery {
        var arrays = KeyArrays()
        keys.forEach { arrays.append($0) }
        let b = SQLBinds()
        let sql = """
            INSERT INTO keys(\(keyColumns), first_seen, admitted_at, last_seen)
            SELECT u.*, \(b(Int(firstSeen)))::bigint, NULL::bigint, \(b(Int(firstSeen)))::bigint
            FROM unnest(\(arrays.unnestArguments(b))) AS \(keyAlias)
            ON CONFLICT (\(keyColumns)) DO UPDATE SET last_seen = excluded.last_seen
            WHERE keys.last_seen / 86400 < excluded.last_seen / 86400
            """
        return b.query(sql)
    }

    /// Locks the keys' registry rows in key order (an admission decision is
    /// made by one node at a time per key) and says which are admitted.
    static func lockKeys(_ keys: [SeriesKey]) -> PostgresQuery {
        var arrays = KeyArrays()
        keys.forEach { arrays.append($0) }
        let b = SQLBinds()
        let sql = """
            SELECT k.model, k.os_major, k.language, k.orientation, k.keyboard_type, k.admitted_at IS NOT NULL FROM keys k
            WHERE (k.model, k.os_major, k.language, k.orientation, k.keyboard_type) IN (
                SELECT * FROM unnest(\(arrays.unnestArguments(b))))
            ORDER BY k.model, k.os_major, k.language, k.orientation, k.keyboard_type
            FOR UPDATE OF k
            """
        return b.query(sql)
    }

    /// Every admitted key with its support: last seen, distinct sources, trusted (as SQLite's `indexedSupport`).
    static let indexedSupport: PostgresQuery = """
        SELECT k.model, k.os_major, k.language, k.orientation, k.keyboard_type, k.last_seen,
               COUNT(s.source)::bigint, bool_or(s.source = 0)
        FROM keys k LEFT JOIN key_sources s ON s.model = k.model AND s.os_major = k.os_major AND s.language = k.language
            AND s.orientation = k.orientation AND s.keyboard_type = k.keyboard_type
        WHERE k.admitted_at IS NOT NULL
        GROUP BY k.model, k.os_major, k.language, k.orientation, k.keyboard_type
        """

    /// Distinct sources per key and whether a trusted peer is among them.
    static func countKeySources(_ keys: [SeriesKey]) -> PostgresQuery {
        var arrays = KeyArrays()
        keys.forEach { arrays.append($0) }
        let b = SQLBinds()
        let sql = """
            SELECT \(keyColumns), COUNT(*)::bigint, bool_or(source = 0) FROM key_sources
            WHERE (\(keyColumns)) IN (SELECT * FROM unnest(\(arrays.unnestArguments(b))))
            GROUP BY \(keyColumns)
            """
        return b.query(sql)
    }

    /// Moves admitted keys' `last_seen` to `now` where it is from an earlier UTC day.
    static func touchKeys(_ keys: [SeriesKey], at now: Int64) -> PostgresQuery {
        var arrays = KeyArrays()
        keys.forEach { arrays.append($0) }
        let b = SQLBinds()
        let sql = """
            UPDATE keys SET last_seen = \(b(Int(now)))::bigint
            WHERE (\(keyColumns)) IN (SELECT * FROM unnest(\(arrays.unnestArguments(b))))
            AND last_seen / 86400 < \(b(Int(now / 86_400)))::bigint
            """
        return b.query(sql)
    }

    /// Marks keys a full index displaced as not admitted (their counts stay stored).
    static func evictKeys(_ keys: [SeriesKey]) -> PostgresQuery {
        var arrays = KeyArrays()
        keys.forEach { arrays.append($0) }
        let b = SQLBinds()
        let sql = """
            UPDATE keys SET admitted_at = NULL
            WHERE (\(keyColumns)) IN (SELECT * FROM unnest(\(arrays.unnestArguments(b))))
            """
        return b.query(sql)
    }

    static func admitKeys(_ keys: [SeriesKey], at now: Int64) -> PostgresQuery {
        var arrays = KeyArrays()
        keys.forEach { arrays.append($0) }
        let b = SQLBinds()
        let sql = """
            UPDATE keys SET admitted_at = \(b(Int(now)))::bigint
            WHERE (\(keyColumns)) IN (SELECT * FROM unnest(\(arrays.unnestArguments(b))))
            """
        return b.query(sql)
    }

    static func logCommit(node: String, at now: Int64, delta: String) -> PostgresQuery {
        let b = SQLBinds()
        return b.query("INSERT INTO commit_log(node, created_at, delta) VALUES (\(b(node)), \(b(Int(now))), \(b(delta))) RETURNING id")
    }
}
