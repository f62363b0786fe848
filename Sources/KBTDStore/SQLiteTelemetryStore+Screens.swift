import KBTDCore

/// Per-screen counts (`screen_counts`, schema v13) and sources (`screen_sources`): written with
/// each commit's other counts, read back with them when the index loads, bounded per key as
/// releases are (`SQLiteTelemetryStore+Releases`).
extension SQLiteTelemetryStore {
    static let screenCounts = MultiRowUpsert(
        slot: 9, "INSERT INTO screen_counts(model, os_major, language, orientation, keyboard_type, screen, height_bin, samples, votes)",
        width: 9, conflict: "ON CONFLICT DO UPDATE SET samples = samples + excluded.samples, votes = votes + excluded.votes")

    func writeScreens(_ counts: [ScreenBin: ReleaseCount]) throws(SQLiteError) {
        try upsert(Self.screenCounts, counts) { bin, count, row in
            row.key(bin.series); row.text(bin.screen.description); row.double(HeightBin.points(bin.halfPoints))
            row.int(count.samples); row.int(count.votes)
        }
    }

    /// Remembers up to 8 sources per (key, screen), as `insertReleaseSource` does per release; a
    /// row already there is not touched.
    static let insertScreenSource = """
        INSERT INTO screen_sources(model, os_major, language, orientation, keyboard_type, screen, source, seen_at)
        SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8
        WHERE (SELECT COUNT(*) FROM screen_sources WHERE model = ?1 AND os_major = ?2 AND language = ?3
               AND orientation = ?4 AND keyboard_type = ?5 AND screen = ?6 AND source <> ?7) < 8
        ON CONFLICT DO NOTHING
        """
    /// Stores which sources reported each (key, screen); returns those stored for the first time
    /// (what the index counts).
    func writeScreenSources(_ sources: [ScreenVariantKey: Set<SourceID>],
                            seenAt: Int64) throws(SQLiteError) -> [ScreenVariantKey: Set<SourceID>] {
        guard !sources.isEmpty else { return [:] }
        let insert = try statement(Self.insertScreenSource)
        var added: [ScreenVariantKey: Set<SourceID>] = [:]
        for (variant, ids) in sources {
            for id in ids {
                try insert.run(key: variant.series) { binder in
                    binder.text(variant.screen.description)
                    binder.int(Int64(bitPattern: id.value))
                    if id.isNetworkHash { binder.int(seenAt) } else { binder.null() }
                }
                if db.changes == 1 { added[variant, default: []].insert(id) }
            }
        }
        return added
    }

    /// Each screen of a key: its docked samples, distinct sources and whether one is a trusted peer.
    static let screenStandings = """
        SELECT screen, SUM(samples), 0, 0 FROM screen_counts
        WHERE model = ?1 AND os_major = ?2 AND language = ?3 AND orientation = ?4 AND keyboard_type = ?5 GROUP BY screen
        UNION ALL
        SELECT screen, 0, COUNT(*), MAX(source = 0) FROM screen_sources
        WHERE model = ?1 AND os_major = ?2 AND language = ?3 AND orientation = ?4 AND keyboard_type = ?5 GROUP BY screen
        """
    static let dropScreenCounts = "DELETE FROM screen_counts WHERE \(oneKey) AND screen = ?"
    static let dropScreenSources = "DELETE FROM screen_sources WHERE \(oneKey) AND screen = ?"

    /// Keeps at most `HeightIndex.maxScreensPerKey` screens of each key in `keys`, dropping the
    /// weakest by the index's own rule (`HeightIndex.screensToDrop`). Called for the keys a commit
    /// gave a screen source new to them: a screen new to its key always brings one.
    func boundScreens(of keys: some Sequence<SeriesKey>) throws(SQLiteError) {
        let standings = try statement(Self.screenStandings)
        for key in keys {
            var held: [ScreenSize: ScreenStanding] = [:]
            try standings.forEachRow(Self.keyValues(key)) { row in
                guard let screen = ScreenSize(row.text(0)) else { return }
                var standing = held[screen] ?? ScreenStanding(screen: screen, support: ReleaseSupport(), samples: 0)
                standing.samples += row.int(1)
                if row.int(2) > 0 {
                    standing.support = ReleaseSupport(sources: Int(row.int(2)), trusted: row.int(3) != 0)
                }
                held[screen] = standing
            }
            for screen in HeightIndex.screensToDrop(Array(held.values)) {
                let values = Self.keyValues(key) + [.text(screen.description)]
                try statement(Self.dropScreenCounts).run(values)
                try statement(Self.dropScreenSources).run(values)
            }
        }
    }
}
