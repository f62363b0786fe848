/// A `PackedSeriesKey` on one OS release: 20 bytes.
struct PackedReleaseKey: Hashable, Sendable {
    var series: PackedSeriesKey
    var minor: UInt32
}

/// What the index keeps of one key on one OS release: its docked samples (true
/// total) and its votes. Lighter than `LevelStats` (no safe areas, sources or
/// animations: those stay per OS major), so the release dimension adds about a
/// hundred bytes per (key, release) (`Benchmarks/keys`).
public struct ReleaseStats: Sendable, Equatable {
    public var samples: Int64 = 0
    public var votes = CountHistogram()

    public init() {}
}

extension HeightIndex {
    /// Adds a delta's per-release counts (`AggregateDelta.releases`), in key order.
    mutating func applyReleases(_ releases: [ReleaseBin: ReleaseCount]) {
        guard !releases.isEmpty else { return }
        var touched: [PackedReleaseKey: (minor: Int, major: Int, stats: ReleaseStats)] = [:]
        for (bin, count) in releases.sorted(by: { $0.key < $1.key }) {
            let series = bin.series
            let kind = PackedLevelKey.kind(orientation: series.orientation, keyboardType: strings.intern(series.keyboardType))
            let packed = PackedSeriesKey(model: strings.intern(series.model), language: strings.intern(series.language),
                                         kind: kind, os: strings.intern(os: series.osMajor))
            guard let minor = UInt32(exactly: bin.minor) else { continue }
            let key = PackedReleaseKey(series: packed, minor: minor)
            var entry = touched[key] ?? (bin.minor, series.osMajor, ReleaseStats())
            entry.stats.samples += count.samples
            if count.votes > 0 { entry.stats.votes.add(bin.halfPoints, count.votes) }
            touched[key] = entry
        }
        for (key, entry) in touched {
            if var stats = releaseStats[key] {
                stats.samples += entry.stats.samples
                stats.votes.merge(entry.stats.votes, limit: LevelStats.binLimit, keepingTies: true)
                releaseStats[key] = stats
            } else {
                var stats = ReleaseStats()
                stats.samples = entry.stats.samples
                stats.votes.merge(entry.stats.votes, limit: LevelStats.binLimit, keepingTies: true)
                releaseStats[key] = stats
            }
            releaseMinors[entry.major, default: []].insert(entry.minor)
        }
    }

    /// Drops a removed exact key's releases.
    mutating func removeReleases(of key: PackedSeriesKey, osMajor: Int) {
        for minor in releaseMinors[osMajor] ?? [] {
            guard let small = UInt32(exactly: minor) else { continue }
            releaseStats.removeValue(forKey: PackedReleaseKey(series: key, minor: small))
        }
    }

    /// (key, release) entries held (the release dimension's size).
    public var releaseCount: Int { releaseStats.count }

    /// The key's stats per OS release of its major, ascending by minor.
    public func releases(of key: SeriesKey) -> [(minor: Int, stats: ReleaseStats)] {
        guard let minors = releaseMinors[key.osMajor], let model = strings.id(key.model),
              let language = strings.id(key.language), let type = strings.id(key.keyboardType),
              let os = strings.id(os: key.osMajor) else { return [] }
        let packed = PackedSeriesKey(model: model, language: language,
                                     kind: PackedLevelKey.kind(orientation: key.orientation, keyboardType: type), os: os)
        return minors.sorted().compactMap { minor in
            guard let small = UInt32(exactly: minor), let stats = releaseStats[PackedReleaseKey(series: packed, minor: small)]
            else { return nil }
            return (minor, stats)
        }
    }
}
