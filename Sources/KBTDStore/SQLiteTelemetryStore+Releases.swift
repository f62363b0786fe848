import KBTDCore

/// Per-release counts (`release_counts`, schema v9): written with each commit's other
/// counts, read back with them when the index loads.
extension SQLiteTelemetryStore {
    static let upsertReleaseCounts = """
        INSERT INTO release_counts(model, os_major, language, orientation, keyboard_type, os_minor, height_bin, samples, votes)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT DO UPDATE SET samples = samples + excluded.samples, votes = votes + excluded.votes
        """

    func writeReleases(_ releases: [ReleaseBin: ReleaseCount]) throws(SQLiteError) {
        guard !releases.isEmpty else { return }
        let upsert = try statement(Self.upsertReleaseCounts)
        for (bin, count) in releases {
            try upsert.run(Self.keyValues(bin.series) + [.int(Int64(bin.minor)), .double(HeightBin.points(bin.halfPoints)),
                                                        .int(count.samples), .int(count.votes)])
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
    static let upsertDayVotes = """
        INSERT INTO day_votes(model, os_major, language, orientation, keyboard_type, day, height_bin, votes)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT DO UPDATE SET votes = votes + excluded.votes
        """

    func writeDayVotes(_ bins: [DayVoteBin: Int64]) throws(SQLiteError) {
        guard !bins.isEmpty else { return }
        let upsert = try statement(Self.upsertDayVotes)
        for (bin, votes) in bins {
            try upsert.run(Self.keyValues(bin.series) + [.int(Int64(bin.day)), .double(HeightBin.points(bin.halfPoints)), .int(votes)])
        }
    }
}
