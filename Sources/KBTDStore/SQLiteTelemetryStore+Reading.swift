import CSQLite
import KBTDCore

/// Reading counts back: whole loads (start-up, the index), one key's counts
/// (an admission), and a page of keys at a time (`kbtd stats`, `/v1/stats`).
extension SQLiteTelemetryStore {
    static func series(_ row: SQLiteRow) -> SeriesKey? {
        guard let orientation = Orientation(rawValue: row.text(3)) else { return nil }
        return SeriesKey(model: row.text(0), osMajor: Int(row.int(1)), language: row.text(2),
                         orientation: orientation, keyboardType: row.text(4))
    }

    public func loadCounts() throws -> AggregateDelta {
        try readCounts(where: nil, [])
    }

    public func loadIndexCounts() throws -> AggregateDelta {
        // A file no kbtd with the key registry has opened yet (read-only): every key, as that kbtd served.
        guard try hasTable("keys") else { return try loadCounts() }
        return try readCounts(where: "(\(Self.keyColumns)) IN (SELECT \(Self.keyColumns) FROM keys WHERE admitted_at IS NOT NULL)", [],
                       screens: true)
    }

    /// Reads counts, one short read transaction per table (so a large
    /// database never pins one snapshot, and the WAL, for the whole read).
    /// `screens`: also the per-model screen counts (keyed by model, not by key:
    /// read for whole loads, not for one key or a page).
    func readCounts(where condition: String?, _ values: [SQLiteValue], screens: Bool? = nil) throws -> AggregateDelta {
        var delta = AggregateDelta()
        let filter = condition.map { " WHERE " + $0 } ?? ""
        let keyColumns = Self.keyColumns
        func read(_ sql: String, _ body: (SQLiteRow, SeriesKey) -> Void) throws {
            try db.inTransaction {
                try statement(sql + filter).forEachRow(values) { row in
                    guard let key = Self.series(row) else { return }
                    body(row, key)
                }
            }
        }
        try read("SELECT \(keyColumns), placement, height_bin, count FROM height_counts") { row, key in
            guard let placement = Placement(rawValue: row.text(5)) else { return }
            delta.heights[HeightCountKey(series: key, placement: placement, halfPoints: HeightBin.halfPoints(row.double(6))),
                          default: 0] += row.int(7)
        }
        try read("SELECT \(keyColumns), event, duration_ms, curve, count FROM animation_counts") { row, key in
            guard let event = KeyboardEvent(rawValue: row.text(5)) else { return }
            delta.animations[AnimationCountKey(series: key, event: event,
                                               bin: AnimationBin(durationMs: Int(row.int(6)), curve: Int(row.int(7)))),
                             default: 0] += row.int(8)
        }
        try read("SELECT \(keyColumns), preloaded, bucket, count FROM cold_start_counts") { row, key in
            delta.coldStarts[ColdStartCountKey(series: key, preloaded: row.int(5) != 0, bucket: Int(row.int(6))),
                             default: 0] += row.int(7)
        }
        try read("SELECT \(keyColumns), safe_area_bin, count FROM safe_area_counts") { row, key in
            delta.safeAreas[SeriesBin(series: key, halfPoints: HeightBin.halfPoints(row.double(5))), default: 0] += row.int(6)
        }
        try read("SELECT \(keyColumns), height_bin, votes FROM height_votes") { row, key in
            delta.votes[SeriesBin(series: key, halfPoints: HeightBin.halfPoints(row.double(5))), default: 0] += row.int(6)
        }
        try read("SELECT \(keyColumns), source FROM key_sources") { row, key in
            delta.sources[key, default: []].insert(SourceID(UInt64(bitPattern: row.int(5))))
        }
        if try hasTable("release_counts") {
            try read("SELECT \(keyColumns), os_minor, height_bin, samples, votes FROM release_counts") { row, key in
                Self.addRelease(row, key, to: &delta)
            }
        }
        if try hasTable("release_sources") {
            try read("SELECT \(keyColumns), os_minor, source FROM release_sources") { row, key in
                delta.releaseSources[ReleaseKey(series: key, minor: Int(row.int(5))), default: []]
                    .insert(SourceID(UInt64(bitPattern: row.int(6))))
            }
        }
        if try hasTable("screen_counts") {
            try read("SELECT \(keyColumns), screen, height_bin, samples, votes FROM screen_counts") { row, key in
                guard let screen = ScreenSize(row.text(5)) else { return }
                delta.screenCounts[ScreenBin(series: key, screen: screen, halfPoints: HeightBin.halfPoints(row.double(6))),
                                   default: .zero] += ReleaseCount(samples: row.int(7), votes: row.int(8))
            }
            try read("SELECT \(keyColumns), screen, source FROM screen_sources") { row, key in
                guard let screen = ScreenSize(row.text(5)) else { return }
                delta.screenSources[ScreenVariantKey(series: key, screen: screen), default: []]
                    .insert(SourceID(UInt64(bitPattern: row.int(6))))
            }
        }
        if try hasTable("day_votes") {
            try read("SELECT \(keyColumns), day, height_bin, votes FROM day_votes") { row, key in
                delta.dayVotes[DayVoteBin(series: key, day: Int(row.int(5)), halfPoints: HeightBin.halfPoints(row.double(6))),
                               default: 0] += row.int(7)
            }
        }
        if try hasTable("day_sources") {
            try read("SELECT \(keyColumns), day, source FROM day_sources") { row, key in
                delta.daySources[DayKey(series: key, day: Int(row.int(5))), default: []].insert(SourceID(UInt64(bitPattern: row.int(6))))
            }
        }
        // A read-only open does not migrate: a database from before schema v4 has no screens yet.
        if screens ?? (condition == nil), try hasTable("model_screens") {
            try statement("SELECT model, screen, count FROM model_screens").forEachRow { row in
                guard let screen = ScreenSize(row.text(1)) else { return }
                delta.screens[ModelScreenKey(model: row.text(0), screen: screen), default: 0] += row.int(2)
            }
        }
        return delta
    }

    // MARK: Reading a page at a time (kbtd stats, /v1/stats)

    private static func conditions(_ filter: StatsFilter) -> (String, [SQLiteValue]) {
        var parts: [String] = []
        var values: [SQLiteValue] = []
        if let model = filter.model { parts.append("model = ?"); values.append(.text(model)) }
        if let osMajor = filter.osMajor { parts.append("os_major = ?"); values.append(.int(Int64(osMajor))) }
        if let language = filter.language { parts.append("language = ?"); values.append(.text(language)) }
        return (parts.isEmpty ? "1" : parts.joined(separator: " AND "), values)
    }

    /// Keys and samples matching `filter`, without reading any histogram.
    public func statsTotals(_ filter: StatsFilter) throws -> (keys: Int64, samples: Int64) {
        let (condition, values) = Self.conditions(filter)
        var keys: Int64 = 0, samples: Int64 = 0
        try db.inTransaction {
            try statement("""
                SELECT COUNT(*), COALESCE(SUM(total), 0) FROM (
                    SELECT SUM(count) AS total FROM animation_counts WHERE \(condition) GROUP BY \(Self.keyColumns))
                """)
                .forEachRow(values) { row in
                    keys = row.int(0)
                    samples = row.int(1)
                }
        }
        return (keys, samples)
    }

    /// Reads the counts of the keys matching `filter` in key order, `pageSize`
    /// keys at a time (one short read transaction per table and page), handing
    /// each page to `body`; stops after `maxKeys` keys. Returns the last key
    /// read when keys remain (a cursor for `after`), else nil. Memory stays
    /// bounded by the page whatever the database holds.
    public func forEachPage(_ filter: StatsFilter, after cursor: SeriesKey? = nil, pageSize: Int = 5_000,
                            maxKeys: Int = .max, _ body: (AggregateDelta) throws -> Void) throws -> SeriesKey? {
        guard try hasTable("keys") else {
            // A database no kbtd with key registry has opened yet: read it whole.
            try body(try loadCounts())
            return nil
        }
        let (condition, filterValues) = Self.conditions(filter)
        let columns = Self.keyColumns
        var last = cursor
        var read = 0
        while read < maxKeys {
            let limit = min(pageSize, maxKeys - read)
            var page: [SeriesKey] = []
            let after = last.map { Self.keyValues($0) } ?? [.text(""), .int(Int64.min), .text(""), .text(""), .text("")]
            try db.inTransaction {
                try statement("SELECT \(columns) FROM keys WHERE \(condition) AND (\(columns)) > (?, ?, ?, ?, ?) ORDER BY \(columns) LIMIT ?")
                    .forEachRow(filterValues + after + [.int(Int64(limit + 1))]) { row in
                        if let key = Self.series(row) { page.append(key) }
                    }
            }
            let more = page.count > limit
            if more { page.removeLast() }
            guard let first = page.first, let end = page.last else { return nil }
            let range = "(\(columns)) >= (?, ?, ?, ?, ?) AND (\(columns)) <= (?, ?, ?, ?, ?) AND \(condition)"
            try body(try readCounts(where: range, Self.keyValues(first) + Self.keyValues(end) + filterValues))
            read += page.count
            last = end
            if !more { return nil }
        }
        return last
    }

    public func forEachKey(_ body: (SeriesKey) -> Void) throws {
        try db.inTransaction {
            try statement("SELECT \(Self.keyColumns) FROM keys").forEachRow { row in
                if let key = Self.series(row) { body(key) }
            }
        }
    }
}
