/// When a key's height last changed, for the dashboard. kbtd stores no
/// history of served answers, so this is derived from what it does store: the key's votes per
/// UTC day of the last `HeightIndex.dayVoteDaysKept` days of data (`day_votes`). For each of
/// those days the key's level-1 votes (`model+os+language`, per OS major) are rewound to the
/// end of that day (the all-time votes less every later day's, the recent votes the horizon
/// before it) and the estimator's own rule (`recentVotesAnswer`) elects a height; the last day
/// on which the elected height differs from the day before's is the change. What this does not
/// see, and the page says so: changes older than the kept days, answers of point releases that
/// moved a keyboard (release counts carry no day), and the lower levels of the chain.
public struct HeightChange: Sendable, Equatable {
    public var key: SeriesKey
    /// The height the key's votes elect now, in points.
    public var height: Double
    /// The UTC day (Unix seconds / 86,400) at whose end the votes first elected `height`;
    /// nil when they elected it on every day of data kept.
    public var changedOnDay: Int?
    /// The height they elected the day before `changedOnDay`, in points.
    public var from: Double?
    /// The first and last days of data looked at (the key's oldest kept day, the index's latest).
    public var firstDay: Int
    public var lastDay: Int

    public init(key: SeriesKey, height: Double, changedOnDay: Int?, from: Double?, firstDay: Int, lastDay: Int) {
        self.key = key
        self.height = height
        self.changedOnDay = changedOnDay
        self.from = from
        self.firstDay = firstDay
        self.lastDay = lastDay
    }
}

extension HeightEstimator {
    /// Each exact key of `model` with votes per day: its height now and its last change (see
    /// `HeightChange`), in key order. Bounded by the model's own keys (as `/v1/heights`) times
    /// the OS majors, and by the kept days.
    public func heightChanges(model: String, in index: HeightIndex) -> [HeightChange] {
        guard let latest = index.latestVoteDay else { return [] }
        var changes: [HeightChange] = []
        for key in index.exactKeys(ofModel: model) {
            guard let whole = index.series(key)?.votes, whole.mode != nil else { continue }
            let days = index.dayVoteEntries(of: key)
            guard let firstDay = days.map(\.day).min() else { continue }
            var elected: [(day: Int, bin: Int)] = []
            for day in firstDay...max(firstDay, latest) {
                var allTime: CountHistogram
                if day >= latest {
                    allTime = whole  // today's votes exactly as the index holds them (ties kept by their incumbent)
                } else {
                    var counts: [Int: Int64] = [:]
                    whole.forEachEntry { bin, count in counts[bin] = count }
                    for entry in days where entry.day > day { counts[entry.halfPoints, default: 0] -= entry.votes }
                    allTime = CountHistogram(counts.filter { $0.value > 0 })
                }
                var recent = CountHistogram()
                if settings.voteHorizonDays > 0 {
                    for entry in days where entry.day <= day && entry.day > day - settings.voteHorizonDays {
                        recent.add(entry.halfPoints, entry.votes)
                    }
                }
                let votes = settings.voteHorizonDays > 0 && recentVotesAnswer(recent, over: allTime) ? recent : allTime
                if let bin = votes.mode { elected.append((day, bin)) }
            }
            guard let now = elected.last else { continue }
            // The last day whose elected height differs from the day before's.
            let change = elected.indices.dropFirst().last { elected[$0].bin != elected[$0 - 1].bin }
            changes.append(HeightChange(key: key, height: HeightBin.points(now.bin), changedOnDay: change.map { elected[$0].day },
                                        from: change.map { HeightBin.points(elected[$0 - 1].bin) }, firstDay: firstDay,
                                        lastDay: max(firstDay, latest)))
        }
        return changes
    }
}

extension HeightIndex {
    /// The exact keys of one model (every OS major it has), in key order.
    public func exactKeys(ofModel model: String) -> [SeriesKey] {
        guard let id = strings.id(model), let levels = modelLanguagesByModel[id] else { return [] }
        var keys: [SeriesKey] = []
        for level in levels {
            for os in 0..<UInt32(strings.osCount) {
                let packed = PackedSeriesKey(model: level.model, language: level.language, kind: level.kind, os: os)
                if seriesSlots[packed] != nil { keys.append(seriesKey(packed)) }
            }
        }
        return keys.sorted()
    }

    /// The key's votes per UTC day kept (`dayVoteDaysKept`), in no particular order.
    public func dayVoteEntries(of key: SeriesKey) -> [(day: Int, halfPoints: Int, votes: Int64)] {
        guard let slot = slot(key) else { return [] }
        var entries: [(day: Int, halfPoints: Int, votes: Int64)] = []
        forEachDayVote(ofSlot: slot) { entries.append((Int($0.day), Int($0.halfPoints), Int64($0.votes))) }
        return entries
    }
}
