import KBTDCore
import KBTDStore
import Logging
import PostgresNIO

/// Reading counts back: whole loads (start-up, the index), some keys' counts
/// (an admission), and a page of keys at a time (`kbtd stats`, `/v1/stats`).
extension PostgresTelemetryStore {
    /// A condition on the key columns and its parameters, e.g. keys IN a list.
    struct KeyFilter {
        /// SQL after `WHERE`, with `$n` placeholders numbered from 1; nil: every row.
        var sql: String?
        var binds: SQLBinds
        /// Also read the per-model screen counts (whole loads only).
        var screens: Bool
    }

    /// Reads the per-key count tables (and the per-model screens) under `filter` on one connection.
    static func readCounts(_ filter: KeyFilter, connection: PostgresConnection, logger: Logger) async throws -> AggregateDelta {
        var delta = AggregateDelta()
        let columns = PostgresSQL.keyColumns
        let condition = filter.sql.map { " WHERE " + $0 } ?? ""
        func rows(_ sql: String) async throws -> PostgresRowSequence {
            try await connection.query(filter.binds.query(sql + condition), logger: logger)
        }
        for try await (m, o, l, r, k, placement, bin, count) in try await rows(
            "SELECT \(columns), placement, height_bin, count FROM height_counts")
            .decode((String, Int, String, String, String, String, Double, Int).self) {
            guard let key = series(m, o, l, r, k), let placement = Placement(rawValue: placement) else { continue }
            delta.heights[HeightCountKey(series: key, placement: placement, halfPoints: HeightBin.halfPoints(bin)), default: 0] += Int64(count)
        }
        for try await (m, o, l, r, k, event, ms, curve, count) in try await rows(
            "SELECT \(columns), event, duration_ms, curve, count FROM animation_counts")
            .decode((String, Int, String, String, String, String, Int, Int, Int).self) {
            guard let key = series(m, o, l, r, k), let event = KeyboardEvent(rawValue: event) else { continue }
            delta.animations[AnimationCountKey(series: key, event: event, bin: AnimationBin(durationMs: ms, curve: curve)), default: 0]
                += Int64(count)
        }
        for try await (m, o, l, r, k, preloaded, bucket, count) in try await rows(
            "SELECT \(columns), preloaded, bucket, count FROM cold_start_counts")
            .decode((String, Int, String, String, String, Int, Int, Int).self) {
            guard let key = series(m, o, l, r, k) else { continue }
            delta.coldStarts[ColdStartCountKey(series: key, preloaded: preloaded != 0, bucket: bucket), default: 0] += Int64(count)
        }
        for try await (m, o, l, r, k, bin, count) in try await rows("SELECT \(columns), safe_area_bin, count FROM safe_area_counts")
            .decode((String, Int, String, String, String, Double, Int).self) {
            guard let key = series(m, o, l, r, k) else { continue }
            delta.safeAreas[SeriesBin(series: key, halfPoints: HeightBin.halfPoints(bin)), default: 0] += Int64(count)
        }
        for try await (m, o, l, r, k, bin, votes) in try await rows("SELECT \(columns), height_bin, votes FROM height_votes")
            .decode((String, Int, String, String, String, Double, Int).self) {
            guard let key = series(m, o, l, r, k) else { continue }
            delta.votes[SeriesBin(series: key, halfPoints: HeightBin.halfPoints(bin)), default: 0] += Int64(votes)
        }
        for try await (m, o, l, r, k, source) in try await rows("SELECT \(columns), source FROM key_sources")
            .decode((String, Int, String, String, String, Int).self) {
            guard let key = series(m, o, l, r, k) else { continue }
            delta.sources[key, default: []].insert(SourceID(UInt64(bitPattern: Int64(source))))
        }
        try await readVariants(PostgresSQL.releases, into: &delta, rows)
        try await readVariants(PostgresSQL.screens, into: &delta, rows)
        for try await (m, o, l, r, k, day, bin, votes) in try await rows("SELECT \(columns), day, height_bin, votes FROM day_votes")
            .decode((String, Int, String, String, String, Int, Double, Int).self) {
            guard let key = series(m, o, l, r, k) else { continue }
            delta.dayVotes[DayVoteBin(series: key, day: day, halfPoints: HeightBin.halfPoints(bin)), default: 0] += Int64(votes)
        }
        for try await (m, o, l, r, k, day, source) in try await rows("SELECT \(columns), day, source FROM day_sources")
            .decode((String, Int, String, String, String, Int, Int).self) {
            guard let key = series(m, o, l, r, k) else { continue }
            delta.daySources[DayKey(series: key, day: day), default: []].insert(SourceID(UInt64(bitPattern: Int64(source))))
        }
        if filter.screens {
            for try await (model, screen, count) in try await connection.query("SELECT model, screen, count FROM model_screens",
                                                                              logger: logger).decode((String, String, Int).self) {
                guard let size = ScreenSize(screen) else { continue }
                delta.screens[ModelScreenKey(model: model, screen: size), default: 0] += Int64(count)
            }
        }
        return delta
    }

    static func series(_ model: String, _ osMajor: Int, _ language: String, _ orientation: String, _ keyboardType: String) -> SeriesKey? {
        guard let orientation = Orientation(rawValue: orientation) else { return nil }
        return SeriesKey(model: model, osMajor: osMajor, language: language, orientation: orientation, keyboardType: keyboardType)
    }

    static func readCounts(keys: [SeriesKey], connection: PostgresConnection, logger: Logger) async throws -> AggregateDelta {
        var arrays = KeyArrays()
        keys.forEach { arrays.append($0) }
        let binds = SQLBinds()
        let sql = "(\(PostgresSQL.keyColumns)) IN (SELECT * FROM unnest(\(arrays.unnestArguments(binds))))"
        return try await readCounts(KeyFilter(sql: sql, binds: binds, screens: false), connection: connection, logger: logger)
    }

    static var admittedFilter: KeyFilter { KeyFilter(
        sql: "(\(PostgresSQL.keyColumns)) IN (SELECT \(PostgresSQL.keyColumns) FROM keys WHERE admitted_at IS NOT NULL)",
        binds: SQLBinds(), screens: true) }

    /// Runs `body` in a read-only REPEATABLE READ transaction: every table read from one snapshot.
    func snapshot<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> T) async throws -> T {
        let database = self.database
        return try await database.withConnection { connection in
            try await connection.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: database.logger)
            do {
                let value = try await body(connection, database.logger)
                try await connection.query("COMMIT", logger: database.logger)
                return value
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: database.logger)
                throw PostgresDatabase.failure(error)
            }
        }
    }

    public func loadCounts() async throws -> AggregateDelta {
        try await snapshot { connection, logger in
            try await Self.readCounts(KeyFilter(sql: nil, binds: SQLBinds(), screens: true), connection: connection, logger: logger)
        }
    }

    public func loadIndexCounts() async throws -> AggregateDelta {
        try await loadIndexSnapshot().counts
    }

    /// The index's counts and, from the same snapshot, where the catch-up
    /// starts: the snapshot's oldest running transaction id and the
    /// `commit_log` rows at or past it that the counts already include.
    public func loadIndexSnapshot() async throws -> IndexSnapshot {
        try await snapshot { connection, logger in
            var horizon = "0"
            var included: [Int64] = []
            for try await (xmin, id) in try await connection.query("""
                WITH s AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin)
                SELECT s.xmin::text, c.id FROM s LEFT JOIN commit_log c ON c.xid >= s.xmin
                """, logger: logger).decode((String, Int?).self) {
                horizon = xmin
                if let id { included.append(Int64(id)) }
            }
            let counts = try await Self.readCounts(Self.admittedFilter, connection: connection, logger: logger)
            return IndexSnapshot(counts: counts, horizon: horizon, included: included)
        }
    }

    public func forEachKey(_ body: (SeriesKey) -> Void) async throws {
        let keys = try await snapshot { connection, logger in
            var keys: [SeriesKey] = []
            for try await row in try await connection.query("SELECT \(unescaped: PostgresSQL.keyColumns) FROM keys", logger: logger) {
                if let key = try Self.series(row) { keys.append(key) }
            }
            return keys
        }
        keys.forEach(body)
    }

    private static func conditions(_ filter: StatsFilter, _ binds: SQLBinds) -> String {
        var parts: [String] = []
        if let model = filter.model { parts.append("model = \(binds(model))") }
        if let osMajor = filter.osMajor { parts.append("os_major = \(binds(osMajor))") }
        if let language = filter.language { parts.append("language = \(binds(language))") }
        return parts.isEmpty ? "TRUE" : parts.joined(separator: " AND ")
    }

    public func statsTotals(_ filter: StatsFilter) async throws -> (keys: Int64, samples: Int64) {
        try await snapshot { connection, logger in
            let binds = SQLBinds()
            let condition = Self.conditions(filter, binds)
            var totals: (Int64, Int64) = (0, 0)
            for try await (keys, samples) in try await connection.query(binds.query("""
                SELECT COUNT(*)::bigint, COALESCE(SUM(total), 0)::bigint FROM (
                    SELECT SUM(count) AS total FROM animation_counts WHERE \(condition) GROUP BY \(PostgresSQL.keyColumns)) t
                """), logger: logger).decode((Int, Int).self) {
                totals = (Int64(keys), Int64(samples))
            }
            return totals
        }
    }

    public func forEachPage(_ filter: StatsFilter, after cursor: SeriesKey?, pageSize: Int, maxKeys: Int,
                            _ body: (AggregateDelta) throws -> Void) async throws -> SeriesKey? {
        var last = cursor
        var read = 0
        let columns = PostgresSQL.keyColumns
        while read < maxKeys {
            let limit = min(pageSize, maxKeys - read)
            let after = last
            let (page, counts): ([SeriesKey], AggregateDelta) = try await snapshot { connection, logger in
                let binds = SQLBinds()
                let condition = Self.conditions(filter, binds)
                var sql = "SELECT \(columns) FROM keys WHERE \(condition)"
                if let after {
                    sql += " AND (\(columns)) > (\(binds(after.model)), \(binds(after.osMajor))::int, \(binds(after.language)), "
                        + "\(binds(after.orientation.rawValue)), \(binds(after.keyboardType)))"
                }
                sql += " ORDER BY \(columns) LIMIT \(binds(limit + 1))"
                var page: [SeriesKey] = []
                for try await row in try await connection.query(binds.query(sql), logger: logger) {
                    if let key = try Self.series(row) { page.append(key) }
                }
                let keys = Array(page.prefix(limit))
                guard !keys.isEmpty else { return (page, AggregateDelta()) }
                return (page, try await Self.readCounts(keys: keys, connection: connection, logger: logger))
            }
            let more = page.count > limit
            let keys = page.prefix(limit)
            guard let end = keys.last else { return nil }
            try body(counts)
            read += keys.count
            last = end
            if !more { return nil }
        }
        return last
    }

    public func hourlyIngest(since: Int64) async throws -> [HourlyIngest] {
        try await snapshot { connection, logger in
            let binds = SQLBinds()
            var hours: [HourlyIngest] = []
            for try await (hour, batches, samples, rejected) in try await connection.query(binds.query(
                "SELECT hour, batches, samples, rejected FROM hourly_ingest WHERE hour >= \(binds(Int(since))) ORDER BY hour"),
                logger: logger).decode((Int, Int, Int, Int).self) {
                hours.append(HourlyIngest(hour: Int64(hour), batches: Int64(batches), samples: Int64(samples), rejected: Int64(rejected)))
            }
            return hours
        }
    }
}

/// What a node's index starts from on PostgreSQL (see `loadIndexSnapshot`).
public struct IndexSnapshot: Sendable {
    public var counts: AggregateDelta
    /// `pg_snapshot_xmin` of the snapshot, as text (an xid8).
    public var horizon: String
    /// `commit_log` ids at or past the horizon whose counts `counts` includes.
    public var included: [Int64]
}
