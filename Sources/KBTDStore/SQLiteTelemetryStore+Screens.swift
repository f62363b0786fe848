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

    /// Stores which sources reported each (key, screen); returns those stored for the first time
    /// (what the index counts).
    func writeScreenSources(_ sources: [ScreenVariantKey: Set<SourceID>],
                            seenAt: Int64) throws(SQLiteError) -> [ScreenVariantKey: Set<SourceID>] {
        guard !sources.isEmpty else { return [:] }
        let insert = try statement(SQLiteVariantTables.screens.insertSource)
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

    /// Keeps at most `HeightIndex.maxScreensPerKey` screens of each key in `keys`, dropping the
    /// weakest by the index's own rule (`HeightIndex.screensToDrop`). Called for the keys a commit
    /// gave a screen source new to them: a screen new to its key always brings one.
    func boundScreens(of keys: some Sequence<SeriesKey>) throws(SQLiteError) {
        for key in keys {
            let held = try variantStandings(.screens, of: key) { ScreenSize($0.text(0)) }
            let standings = held.map { ScreenStanding(screen: $0.key, support: $0.value.support, samples: $0.value.samples) }
            for screen in HeightIndex.screensToDrop(standings) {
                try dropVariant(.screens, of: key, .text(screen.description))
            }
        }
    }
}
