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

/// One key on one UTC day of receipt: what the sources behind its recent votes are counted for.
public struct DayKey: Hashable, Sendable, Comparable {
    public var series: SeriesKey
    public var day: Int

    public init(series: SeriesKey, day: Int) {
        self.series = series
        self.day = day
    }

    public static func < (a: Self, b: Self) -> Bool { (a.series, a.day) < (b.series, b.day) }
}

extension AggregateDelta {
    /// Tags this batch's (already weighed) votes with the UTC day of `receivedAt` (Unix seconds),
    /// and its keys' sources with the day where a vote of theirs weighed (`daySources`).
    /// Call it once per batch, after `SourcePolicy.apply` (as `recordRelease(os:)`): ingest does.
    public mutating func recordDay(receivedAt: Int64) {
        let day = Int(receivedAt.dividedRoundingDown(by: 86_400))
        for (key, count) in votes where count > 0 {
            dayVotes[DayVoteBin(series: key.series, day: day, halfPoints: key.halfPoints), default: 0] += count
            if let ids = sources[key.series], !ids.isEmpty {
                daySources[DayKey(series: key.series, day: day), default: []].formUnion(ids)
            }
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

/// One day's votes on one bin of one key, linked into the index's pool (`HeightIndex.dayVotePool`):
/// 12 bytes (a UTC day number fits 16 bits until 2149; a height in half points, 16 bits; one day's
/// votes on one bin saturate at 2^32 - 1; the key's next entry), with no per-key dictionary entry
/// or array: a key's first day costs 12 bytes, not about 130.
struct DayVotes: PooledEntry, Sendable, Equatable {
    var day: UInt16
    var halfPoints: Int16
    var votes: UInt32
    /// The key's next entry, or `HeightIndex.noEntry`.
    var next: UInt32
}

/// One source whose votes weighed on a key, and the latest UTC day they did, linked into the
/// index's pool (`HeightIndex.daySourcePool`): a key keeps its `LevelStats.sourceLimit` latest
/// voters, which is every voter of any recent window up to that many (a voter dropped for a
/// later one voted last before every one kept), so a window's distinct networks are counted
/// exactly up to the limit in 16 bytes each.
struct DaySource: PooledEntry, Sendable, Equatable {
    var source: UInt64
    var day: UInt16
    /// The key's next entry, or `HeightIndex.noEntry`.
    var next: UInt32
}

extension HeightIndex {
    /// Adds a delta's per-day sources: each source's latest day moves on; a key keeps its
    /// `LevelStats.sourceLimit` latest voters. Giving the same (key, day, source) again changes nothing.
    mutating func applyDaySources(_ sources: [DayKey: Set<SourceID>], packed: [SeriesKey: PackedSeriesKey] = [:]) {
        guard !sources.isEmpty else { return }
        for (key, ids) in sources {
            guard let day = UInt16(exactly: key.day),
                  let slot = seriesSlots[packed[key.series] ?? packedKey(key.series)] else { continue }
            for id in ids.sorted() { addDaySource(id.value, day: day, slot: slot) }
        }
    }

    private mutating func addDaySource(_ source: UInt64, day: UInt16, slot: UInt32) {
        var lists = lists(of: slot)
        var position = lists.daySources
        var count = 0
        var oldest = Self.noEntry
        while position != Self.noEntry {
            let entry = daySourcePool[Int(position)]
            if entry.source == source {
                if entry.day < day { daySourcePool[Int(position)].day = day }
                return
            }
            if oldest == Self.noEntry || entry.day < daySourcePool[Int(oldest)].day { oldest = position }
            count += 1
            position = entry.next
        }
        if count >= LevelStats.sourceLimit {
            // Full: the voter whose latest vote is the oldest gives way to a later one.
            if daySourcePool[Int(oldest)].day < day {
                daySourcePool[Int(oldest)].source = source
                daySourcePool[Int(oldest)].day = day
            }
            return
        }
        lists.daySources = Self.place(DaySource(source: source, day: day, next: lists.daySources), in: &daySourcePool,
                                      free: &freeDaySource)
        setLists(lists, of: slot)
    }

    /// Drops a removed exact key's per-day sources.
    mutating func removeDaySources(ofSlot slot: UInt32) {
        var lists = lists(of: slot)
        var position = lists.daySources
        guard position != Self.noEntry else { return }
        while position != Self.noEntry {
            let next = daySourcePool[Int(position)].next
            daySourcePool[Int(position)] = DaySource(source: 0, day: 0, next: freeDaySource)
            freeDaySource = position
            position = next
        }
        lists.daySources = Self.noEntry
        setLists(lists, of: slot)
    }

    /// The distinct sources whose votes on the key weighed from UTC day `sinceDay` on (up to
    /// `LevelStats.sourceLimit`), and whether one is a trusted peer.
    func daySupport(ofSlot slot: UInt32, sinceDay: Int) -> ReleaseSupport {
        var sources = 0
        var trusted = false
        var position = lists(of: slot).daySources
        while position != Self.noEntry {
            let entry = daySourcePool[Int(position)]
            if Int(entry.day) >= sinceDay {
                sources += 1
                if entry.source == SourceID.trusted.value { trusted = true }
            }
            position = entry.next
        }
        return ReleaseSupport(sources: sources, trusted: trusted)
    }
}

extension HeightIndex {
    /// Days of per-day votes the index keeps, counted back from the latest day with data
    /// (the largest `vote_horizon_days` allowed): a month keeps the index within its memory
    /// target at 100k keys even when every key gets votes every day (`Benchmarks/keys`).
    public static let dayVoteDaysKept = 31

    /// The oldest UTC day of votes kept when `latest` is the latest day with data: the index drops
    /// older days as it applies deltas, and the stores delete them from `day_votes` in their hourly
    /// upkeep (`pruneBatchIDs`), counting back from the latest day of the keys the index loads,
    /// so a restart loads what the index held and answers as it did.
    public static func oldestDayKept(latest: Int) -> Int {
        latest - dayVoteDaysKept + 1
    }

    /// Adds a delta's per-day votes, and drops days older than `dayVoteDaysKept` before the latest.
    /// Days are kept with their exact key (whose votes the same delta carries, `apply`, which passes
    /// the keys it packed). A key's entries are linked in (day, bin) order, as before: the bins are
    /// sorted by the key's slot, then day and bin (numbers, not the key's strings).
    mutating func applyDayVotes(_ bins: [DayVoteBin: Int64], packed: [SeriesKey: PackedSeriesKey] = [:]) {
        guard !bins.isEmpty else { return }
        let previousLatest = latestVoteDay
        var touched: Set<UInt32> = []
        var found: [(slot: UInt32, day: UInt16, half: Int16, count: Int64)] = []
        found.reserveCapacity(bins.count)
        for (bin, count) in bins where count > 0 {
            guard let day = UInt16(exactly: bin.day), let half = Int16(exactly: bin.halfPoints) else { continue }
            latestVoteDay = max(latestVoteDay ?? bin.day, bin.day)
            guard let slot = seriesSlots[packed[bin.series] ?? packedKey(bin.series)] else { continue }
            found.append((slot, day, half, count))
        }
        found.sort { ($0.slot, $0.day, $0.half) < ($1.slot, $1.day, $1.half) }
        for (slot, day, half, count) in found {
            var lists = lists(of: slot)
            var position = lists.dayVotes
            while position != Self.noEntry, dayVotePool[Int(position)].day != day || dayVotePool[Int(position)].halfPoints != half {
                position = dayVotePool[Int(position)].next
            }
            if position != Self.noEntry {
                dayVotePool[Int(position)].votes = UInt32(clamping: Int64(dayVotePool[Int(position)].votes) + count)
            } else {
                lists.dayVotes = newDayVotes(DayVotes(day: day, halfPoints: half, votes: UInt32(clamping: count), next: lists.dayVotes))
                setLists(lists, of: slot)
            }
            touched.insert(slot)
        }
        guard let latest = latestVoteDay else { return }
        let oldest = Self.oldestDayKept(latest: latest)
        if previousLatest != latest {
            // A new day: one sweep over every key (at most once a day of data).
            for slot in seriesSlots.values { prune(slot, oldest: oldest) }
        } else {
            for slot in touched { prune(slot, oldest: oldest) }
        }
    }

    private mutating func newDayVotes(_ entry: DayVotes) -> UInt32 {
        Self.place(entry, in: &dayVotePool, free: &freeDayVote)
    }

    /// Unlinks the key's entries older than `oldest` (or all of them) into the pool's free list.
    private mutating func prune(_ slot: UInt32, oldest: Int) {
        var lists = lists(of: slot)
        var previous = Self.noEntry
        var position = lists.dayVotes
        var changed = false
        while position != Self.noEntry {
            let next = dayVotePool[Int(position)].next
            if Int(dayVotePool[Int(position)].day) < oldest {
                if previous == Self.noEntry { lists.dayVotes = next } else { dayVotePool[Int(previous)].next = next }
                dayVotePool[Int(position)] = DayVotes(day: 0, halfPoints: 0, votes: 0, next: freeDayVote)
                freeDayVote = position
                changed = true
            } else {
                previous = position
            }
            position = next
        }
        if changed { setLists(lists, of: slot) }
    }

    /// Drops a removed exact key's per-day votes.
    mutating func removeDayVotes(ofSlot slot: UInt32) {
        prune(slot, oldest: Int.max)
    }

    /// (key) entries holding per-day votes.
    public var dayVoteKeyCount: Int {
        seriesSlots.values.reduce(0) { $0 + (lists(of: $1).dayVotes == Self.noEntry ? 0 : 1) }
    }

    /// Calls `body` with each of the slot's per-day entries, in list order.
    func forEachDayVote(ofSlot slot: UInt32, _ body: (DayVotes) -> Void) {
        var position = lists(of: slot).dayVotes
        while position != Self.noEntry {
            let entry = dayVotePool[Int(position)]
            body(entry)
            position = entry.next
        }
    }

    /// The key's votes from UTC day `sinceDay` on (nil when it has none).
    func dayVotes(ofSlot slot: UInt32, sinceDay: Int) -> CountHistogram? {
        var votes = CountHistogram()
        forEachDayVote(ofSlot: slot) { entry in
            if Int(entry.day) >= sinceDay { votes.add(Int(entry.halfPoints), Int64(entry.votes)) }
        }
        return votes.total > 0 ? votes : nil
    }
}

extension HeightEstimator {
    /// The key's stats with its votes aged: when the key's votes of the last `voteHorizonDays`
    /// days of data (counted back from the index's latest day) reach `min_samples`, come from
    /// `min_sources` networks (or a trusted peer) and their mode differs from the all-time mode, they answer instead of the all-time votes (the
    /// docked samples, sources, safe areas and animations stay all-time). A key whose recent
    /// votes agree with all of its history answers exactly as without ageing, and a tie in the
    /// recent votes keeps the served height (as `CountHistogram`'s incumbent does).
    func aged(_ whole: LevelStats, _ key: SeriesKey, in index: some HeightLevels) -> LevelStats {
        guard settings.voteHorizonDays > 0, let latest = index.latestVoteDay else { return whole }
        let since = latest - settings.voteHorizonDays + 1
        // The window answers on its own only with `min_sources` networks of its own (or a trusted
        // peer), as a release does: one network voting on a few recent days must not outvote
        // the networks behind the key's history.
        guard let recent = index.recentVotes(of: key, sinceDay: since), recentVotesAnswer(recent, over: whole.votes),
              index.recentSupport(of: key, sinceDay: since).satisfies(settings.minSources) else { return whole }
        var stats = whole
        stats.votes = recent
        return stats
    }

    /// Whether a key's recent votes answer instead of its all-time votes (the one rule `aged`
    /// and the dashboard's change history, `heightChanges`, apply): they reach `min_samples`,
    /// their mode differs from the all-time mode and, as with all-time votes, a tie keeps the
    /// served height: the recent mode must have strictly more recent votes than the all-time
    /// mode's bin.
    func recentVotesAnswer(_ recent: CountHistogram, over allTime: CountHistogram) -> Bool {
        guard recent.total >= settings.minSamples, let mode = recent.mode, mode != allTime.mode else { return false }
        var (modeVotes, servedVotes): (Int64, Int64) = (0, 0)
        recent.forEachEntry { bin, count in
            if bin == mode { modeVotes = count }
            if bin == allTime.mode { servedVotes = count }
        }
        return modeVotes > servedVotes
    }
}
