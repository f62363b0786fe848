/// A `PackedSeriesKey` on one OS release: 16 bytes (the OS major's number and the minor share a word:
/// both are under 65,536, as `FieldRules` allows at most 4 digits per part).
struct PackedReleaseKey: Hashable, Sendable {
    var model: UInt32
    var language: UInt32
    var kind: UInt32
    var release: UInt32

    init?(_ series: PackedSeriesKey, minor: Int) {
        guard series.os < 65_536, (0..<65_536).contains(minor) else { return nil }
        model = series.model
        language = series.language
        kind = series.kind
        release = series.os << 16 | UInt32(minor)
    }
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
            guard let key = PackedReleaseKey(packed, minor: bin.minor) else { continue }
            var entry = touched[key] ?? (bin.minor, series.osMajor, ReleaseStats())
            entry.stats.samples += count.samples
            if count.votes > 0 { entry.stats.votes.add(bin.halfPoints, count.votes) }
            touched[key] = entry
        }
        for (key, entry) in touched {
            let slot: UInt32
            if let existing = releaseStats[key] {
                slot = existing
            } else if let free = freeReleaseSlots.popLast() {
                slot = free
                releaseSlots[Int(slot)] = ReleaseStats()
                releaseStats[key] = slot
            } else {
                slot = UInt32(releaseSlots.count)
                releaseSlots.append(ReleaseStats())
                releaseStats[key] = slot
            }
            releaseSlots[Int(slot)].samples += entry.stats.samples
            releaseSlots[Int(slot)].votes.merge(entry.stats.votes, limit: LevelStats.binLimit, keepingTies: true)
            releaseMinors[entry.major, default: []].insert(entry.minor)
        }
    }

    /// Drops a removed exact key's releases.
    mutating func removeReleases(of key: PackedSeriesKey, osMajor: Int) {
        for minor in releaseMinors[osMajor] ?? [] {
            guard let release = PackedReleaseKey(key, minor: minor), let slot = releaseStats.removeValue(forKey: release) else { continue }
            releaseSlots[Int(slot)] = ReleaseStats()
            freeReleaseSlots.append(slot)
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
            guard let release = PackedReleaseKey(packed, minor: minor), let slot = releaseStats[release] else { return nil }
            return (minor, releaseSlots[Int(slot)])
        }
    }
}
