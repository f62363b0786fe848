import KBTDCore

/// Per-release counts (`release_counts`, schema v9) and sources (`release_sources`, v11):
/// written with each commit's other counts, read back with them when the index loads.
extension SQLiteTelemetryStore {
    static let releaseCounts = MultiRowUpsert(
        slot: 6, "INSERT INTO release_counts(model, os_major, language, orientation, keyboard_type, os_minor, height_bin, samples, votes)",
        width: 9, conflict: "ON CONFLICT DO UPDATE SET samples = samples + excluded.samples, votes = votes + excluded.votes")

    func writeReleases(_ releases: [ReleaseBin: ReleaseCount]) throws(SQLiteError) {
        try upsert(Self.releaseCounts, releases) { bin, count, row in
            row.key(bin.series); row.int(Int64(bin.minor)); row.double(HeightBin.points(bin.halfPoints))
            row.int(count.samples); row.int(count.votes)
        }
    }

    /// Stores which sources reported each (key, release); returns those stored for the first time
    /// (what the index counts). Trusted and retired rows never expire.
    func writeReleaseSources(_ sources: [ReleaseKey: Set<SourceID>], seenAt: Int64) throws(SQLiteError) -> [ReleaseKey: Set<SourceID>] {
        guard !sources.isEmpty else { return [:] }
        let insert = try statement(SQLiteVariantTables.releases.insertSource)
        var added: [ReleaseKey: Set<SourceID>] = [:]
        for (release, ids) in sources {
            let fingerprint = ids.contains(.trusted) ? release.series.fingerprint : 0
            for id in ids {
                if id == .trusted {
                    // As for `key_sources` (`write`): a row a commit already wrote is not written again.
                    if indexed.knowsTrustedRow(fingerprint, minor: release.minor) { continue }
                    indexed.noteTrustedRow(fingerprint, minor: release.minor)
                }
                try insert.run(key: release.series) { binder in
                    binder.int(Int64(release.minor))
                    binder.int(Int64(bitPattern: id.value))
                    if id.isNetworkHash { binder.int(seenAt) } else { binder.null() }
                }
                if db.changes == 1 { added[release, default: []].insert(id) }
            }
        }
        return added
    }

    /// Keeps at most `HeightIndex.maxReleasesPerKey` releases of each key in `keys`, dropping
    /// the weakest one's rows by the index's own rule (`HeightIndex.releasesToDrop`), so one
    /// network spraying minors adds at most that many releases' rows to a key, and the index a
    /// restart loads holds the releases the live one did. Called for the keys a commit gave a
    /// release source new to them: a release new to its key always brings one.
    func boundReleases(of keys: some Sequence<SeriesKey>) throws(SQLiteError) {
        for key in keys {
            let held = try variantStandings(.releases, of: key) { Int($0.int(0)) }
            let standings = held.map { ReleaseStanding(minor: $0.key, support: $0.value.support, samples: $0.value.samples) }
            for minor in HeightIndex.releasesToDrop(standings) {
                try dropVariant(.releases, of: key, .int(Int64(minor)))
                // Its trusted row is gone: a later report of the release must write it again.
                indexed.forgetTrustedRow(key.fingerprint, minor: minor)
            }
        }
    }

    /// One `release_counts` row (key columns, then os_minor, height_bin, samples, votes).
    static func addRelease(_ row: SQLiteRow, _ key: SeriesKey, to delta: inout AggregateDelta) {
        let bin = ReleaseBin(series: key, minor: Int(row.int(5)), halfPoints: HeightBin.halfPoints(row.double(6)))
        delta.releases[bin, default: .zero] += ReleaseCount(samples: row.int(7), votes: row.int(8))
    }
}

/// Votes per UTC day (`day_votes`, schema v10): written with each commit's other counts,
/// read back with them when the index loads (the index keeps the last days; `VoteAge.swift`).
extension SQLiteTelemetryStore {
    static let dayVotes = MultiRowUpsert(
        slot: 7, "INSERT INTO day_votes(model, os_major, language, orientation, keyboard_type, day, height_bin, votes)",
        width: 8, conflict: "ON CONFLICT DO UPDATE SET votes = votes + excluded.votes")

    func writeDayVotes(_ bins: [DayVoteBin: Int64]) throws(SQLiteError) {
        try upsert(Self.dayVotes, bins) { bin, votes, row in
            row.key(bin.series); row.int(Int64(bin.day)); row.double(HeightBin.points(bin.halfPoints)); row.int(votes)
        }
    }

    /// Which sources' votes weighed on each key per day (`day_sources`, schema v12), a row each,
    /// in multi-row statements; a row already there is not touched. No cap per (key, day) is
    /// needed: a row comes only with a weighed vote, which the day's vote ledger bounds per
    /// network and group (`SourcePolicy`), and the rows go with their day's votes.
    static let daySources = MultiRowUpsert(
        slot: 8, "INSERT INTO day_sources(model, os_major, language, orientation, keyboard_type, day, source)",
        width: 7, conflict: "ON CONFLICT DO NOTHING")

    func writeDaySources(_ sources: [DayKey: Set<SourceID>]) throws(SQLiteError) {
        guard !sources.isEmpty else { return }
        var rows: [DaySourceRow: Int64] = [:]
        for (key, ids) in sources {
            for id in ids { rows[DaySourceRow(key: key, source: id), default: 0] = 0 }
        }
        try upsert(Self.daySources, rows) { row, _, values in
            values.key(row.key.series); values.int(Int64(row.key.day)); values.int(Int64(bitPattern: row.source.value))
        }
    }
}

/// One `day_sources` row: a key, a day, a source.
struct DaySourceRow: Hashable {
    var key: DayKey
    var source: SourceID
}
