import KBTDCore

/// The two tables of a per-key variant, OS releases (`release_counts`, `release_sources`, by
/// `os_minor`) or reported screens (`screen_counts`, `screen_sources`, by `screen`): the
/// statements both kinds run, written once.
struct SQLiteVariantTables: Sendable {
    /// Remembers a source of a (key, variant), up to 8 per (key, variant), as `insertKeySource`
    /// does per key, so a change here is a new source of the variant (the index counts them,
    /// `ReleaseSupport`). `seen_at` is when a network's keyed hash first reported the variant: a row
    /// already there is not touched (one statement a source, not two); it retires with its key's
    /// row (`retireSources`), or by its own `seen_at` where the key keeps 8 other sources.
    let insertSource: String
    /// Each variant of a key: its docked samples, distinct sources and whether one is a trusted
    /// peer, as the index counts them (a variant can have sources and no docked counts yet).
    let standings: String
    let dropCounts: String
    let dropSources: String

    init(counts: String, sources: String, column: String) {
        insertSource = """
            INSERT INTO \(sources)(model, os_major, language, orientation, keyboard_type, \(column), source, seen_at)
            SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8
            WHERE (SELECT COUNT(*) FROM \(sources) WHERE model = ?1 AND os_major = ?2 AND language = ?3
                   AND orientation = ?4 AND keyboard_type = ?5 AND \(column) = ?6 AND source <> ?7) < 8
            ON CONFLICT DO NOTHING
            """
        standings = """
            SELECT \(column), SUM(samples), 0, 0 FROM \(counts)
            WHERE model = ?1 AND os_major = ?2 AND language = ?3 AND orientation = ?4 AND keyboard_type = ?5 GROUP BY \(column)
            UNION ALL
            SELECT \(column), 0, COUNT(*), MAX(source = 0) FROM \(sources)
            WHERE model = ?1 AND os_major = ?2 AND language = ?3 AND orientation = ?4 AND keyboard_type = ?5 GROUP BY \(column)
            """
        dropCounts = "DELETE FROM \(counts) WHERE \(SQLiteTelemetryStore.oneKey) AND \(column) = ?"
        dropSources = "DELETE FROM \(sources) WHERE \(SQLiteTelemetryStore.oneKey) AND \(column) = ?"
    }

    static let releases = SQLiteVariantTables(counts: "release_counts", sources: "release_sources", column: "os_minor")
    static let screens = SQLiteVariantTables(counts: "screen_counts", sources: "screen_sources", column: "screen")
}

extension SQLiteTelemetryStore {
    /// The variants `key` holds in `tables` (`variant` reads one from a row's first column), with
    /// their docked samples and support: what `HeightIndex.releasesToDrop` and `screensToDrop` rank.
    func variantStandings<Variant: Hashable>(_ tables: SQLiteVariantTables, of key: SeriesKey,
                                             _ variant: (SQLiteRow) -> Variant?) throws(SQLiteError)
        -> [Variant: (support: ReleaseSupport, samples: Int64)] {
        var held: [Variant: (support: ReleaseSupport, samples: Int64)] = [:]
        try statement(tables.standings).forEachRow(Self.keyValues(key)) { row in
            guard let value = variant(row) else { return }
            var standing = held[value] ?? (ReleaseSupport(), 0)
            standing.samples += row.int(1)
            if row.int(2) > 0 { standing.support = ReleaseSupport(sources: Int(row.int(2)), trusted: row.int(3) != 0) }
            held[value] = standing
        }
        return held
    }

    /// Deletes one variant of `key` (`value`, as its column holds it) from both tables.
    func dropVariant(_ tables: SQLiteVariantTables, of key: SeriesKey, _ value: SQLiteValue) throws(SQLiteError) {
        let values = Self.keyValues(key) + [value]
        try statement(tables.dropCounts).run(values)
        try statement(tables.dropSources).run(values)
    }
}
