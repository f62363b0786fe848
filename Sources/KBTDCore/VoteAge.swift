/// Age-weighted votes (docs/fallback-chain.md, "Old data stops outvoting new"): the
/// `model+os+language` level's votes again, per UTC day of receipt, for the last
/// `HeightIndex.dayVoteDaysKept` days of data. The estimator takes the mode of the last
/// `vote_horizon_days` of them where they have a level's support and disagree with the
/// all-time mode, so a key whose height changed for reasons no release shows converges
/// to the new height within the horizon, not after new samples outnumber years of old ones.
/// Counts operators read (`kbtd stats`, `/v1/stats`, the dashboard) stay all-time totals.
public struct DayVoteBin: Hashable, Sendable, Comparable {
    public var series: SeriesKey
    /// UTC day (Unix seconds / 86,400) the batch was received.
    public var day: Int
    public var halfPoints: Int

    public init(series: SeriesKey, day: Int, halfPoints: Int) {
        self.series = series
        self.day = day
        self.halfPoints = halfPoints
    }

    public static func < (a: Self, b: Self) -> Bool {
        (a.series, a.day, a.halfPoints) < (b.series, b.day, b.halfPoints)
    }
}

extension AggregateDelta {
    /// Tags this batch's (already weighed) votes with the UTC day of `receivedAt` (Unix seconds).
    /// Call it once per batch, after `SourcePolicy.apply` (as `recordRelease(os:)`): ingest does.
    public mutating func recordDay(receivedAt: Int64) {
        let day = Int(receivedAt.dividedRoundingDown(by: 86_400))
        for (key, count) in votes where count > 0 {
            dayVotes[DayVoteBin(series: key.series, day: day, halfPoints: key.halfPoints), default: 0] += count
        }
    }
}

extension Int64 {
    /// Floor division (a day of a time before 1970 rounds down too).
    public func dividedRoundingDown(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor < 0) ? quotient - 1 : quotient
    }
}

/// One day's votes on one bin of one key: 8 bytes (a UTC day number fits 16 bits until 2149;
/// a height in half points, 16 bits; one day's votes on one bin saturate at 2^32 - 1).
struct DayVotes: Sendable, Equatable {
    var day: UInt16
    var halfPoints: Int16
    var votes: UInt32
}

extension HeightIndex {
    /// Days of per-day votes the index keeps, counted back from the latest day with data
    /// (the largest `vote_horizon_days` allowed): a month keeps the index within its memory
    /// target at 100k keys even when every key gets votes every day (`Benchmarks/keys`).
    public static let dayVoteDaysKept = 31

    /// Adds a delta's per-day votes, and drops days older than `dayVoteDaysKept` before the latest.
    mutating func applyDayVotes(_ bins: [DayVoteBin: Int64]) {
        guard !bins.isEmpty else { return }
        let previousLatest = latestVoteDay
        var touched: Set<PackedSeriesKey> = []
        for (bin, count) in bins.sorted(by: { $0.key < $1.key }) where count > 0 {
            guard let day = UInt16(exactly: bin.day), let half = Int16(exactly: bin.halfPoints) else { continue }
            let series = bin.series
            let kind = PackedLevelKey.kind(orientation: series.orientation, keyboardType: strings.intern(series.keyboardType))
            let packed = PackedSeriesKey(model: strings.intern(series.model), language: strings.intern(series.language),
                                         kind: kind, os: strings.intern(os: series.osMajor))
            var entries = dayVotes.removeValue(forKey: packed) ?? []
            if let i = entries.firstIndex(where: { $0.day == day && $0.halfPoints == half }) {
                entries[i].votes = UInt32(clamping: Int64(entries[i].votes) + count)
            } else {
                entries.append(DayVotes(day: day, halfPoints: half, votes: UInt32(clamping: count)))
            }
            dayVotes[packed] = entries
            touched.insert(packed)
            latestVoteDay = max(latestVoteDay ?? bin.day, bin.day)
        }
        guard let latest = latestVoteDay else { return }
        let oldest = latest - Self.dayVoteDaysKept + 1
        if previousLatest != latest {
            // A new day: one sweep over every key (at most once a day of data).
            for key in Array(dayVotes.keys) { prune(key, oldest: oldest) }
        } else {
            for key in touched { prune(key, oldest: oldest) }
        }
    }

    private mutating func prune(_ key: PackedSeriesKey, oldest: Int) {
        guard let entries = dayVotes[key], entries.contains(where: { Int($0.day) < oldest }) else { return }
        let kept = entries.filter { Int($0.day) >= oldest }
        dayVotes[key] = kept.isEmpty ? nil : kept
    }

    /// Drops a removed exact key's per-day votes.
    mutating func removeDayVotes(of key: PackedSeriesKey) {
        dayVotes.removeValue(forKey: key)
    }

    /// (key) entries holding per-day votes.
    public var dayVoteKeyCount: Int { dayVotes.count }
}

extension HeightEstimator {
    /// The key's stats with its votes aged: when the key's votes of the last `voteHorizonDays`
    /// days of data (counted back from the index's latest day) reach `min_samples` and their
    /// mode differs from the all-time mode, they answer instead of the all-time votes (the
    /// docked samples, sources, safe areas and animations stay all-time). A key whose recent
    /// votes agree with all of its history answers exactly as without ageing, and a tie in the
    /// recent votes keeps the served height (as `CountHistogram`'s incumbent does).
    func aged(_ whole: LevelStats, _ key: SeriesKey, in index: some HeightLevels) -> LevelStats {
        guard settings.voteHorizonDays > 0, let latest = index.latestVoteDay,
              let recent = index.recentVotes(of: key, sinceDay: latest - settings.voteHorizonDays + 1),
              recent.total >= settings.minSamples, let mode = recent.mode, mode != whole.votes.mode else { return whole }
        // As with all-time votes, a tie keeps the served height: the recent mode must have strictly
        // more recent votes than the all-time mode's bin.
        var (modeVotes, servedVotes): (Int64, Int64) = (0, 0)
        recent.forEachEntry { bin, count in
            if bin == mode { modeVotes = count }
            if bin == whole.votes.mode { servedVotes = count }
        }
        guard modeVotes > servedVotes else { return whole }
        var stats = whole
        stats.votes = recent
        return stats
    }
}
