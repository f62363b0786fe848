/// One key's docked samples, votes and support on one OS release, linked into the index's pool
/// (`HeightIndex.releasePool`): 40 bytes (the support sits in what was padding before the minor),
/// with no per-key dictionary entry or array.
struct ReleaseEntry: PooledEntry, Sendable {
    var stats: ReleaseStats
    /// The release's minor (`FieldRules` allows at most 4 digits per part).
    var minor: UInt16
    /// The key's next release entry, or `HeightIndex.noEntry`.
    var next: UInt32
}

/// Where an exact key's pooled lists start (`HeightIndex.slotLists`, by the key's slot):
/// its release entries, its screen entries, its per-day votes and its latest voters, each
/// `HeightIndex.noEntry` when it has none.
struct SlotLists: Sendable {
    var releases = HeightIndex.noEntry
    var screens = HeightIndex.noEntry
    var dayVotes = HeightIndex.noEntry
    var daySources = HeightIndex.noEntry
}

/// What the index keeps of one key on one OS release: its docked samples (true
/// total), its votes and how many sources stand behind them. Lighter than `LevelStats`
/// (no safe areas, source identities or animations: those stay per OS major), so the
/// release dimension adds about 45 bytes per (key, release) (`Benchmarks/keys`).
public struct ReleaseStats: Sendable, Equatable {
    public var samples: Int64 = 0
    public var votes = CountHistogram()
    /// Distinct sources of this release (in the 40-byte entry's padding: no memory added).
    public var support = ReleaseSupport()

    public init() {}
}

extension HeightIndex {
    /// The end of a pooled list (and a slot without one).
    static let noEntry = UInt32.max

    /// Releases kept per key, in the index and in the stores (docs/fallback-chain.md, "Point
    /// releases"). An OS major has had at most 7 point releases so far; a client spraying minors
    /// must not grow a key, its rows or the estimator's work for it, without bound. Past it the
    /// key's weakest releases go (`releasesToDrop`): a release with support of its own outlasts
    /// any number of one network's. A dropped release's samples still count for the OS major, as
    /// every release's do.
    public static let maxReleasesPerKey = 16

    /// The releases of one key to drop so that at most `maxReleasesPerKey` remain: the weakest,
    /// by support (a trusted peer above any number of networks, then more networks), then
    /// docked samples, then the lower minor. The one rule the index and both stores apply to a
    /// key's releases after adding a commit's (or a load's) to them: it depends only on what
    /// the key holds then, not on the order data came in, so a store's rows, the index built
    /// live and the index a restart loads from those rows keep the same releases.
    public static func releasesToDrop(_ held: [ReleaseStanding]) -> [Int] {
        guard held.count > maxReleasesPerKey else { return [] }
        return held.sorted { ($0.support.strength, $0.samples, $0.minor) < ($1.support.strength, $1.samples, $1.minor) }
            .prefix(held.count - maxReleasesPerKey).map(\.minor)
    }

    /// The lists of the exact key in `slot` (slots appended since the array last grew have none).
    func lists(of slot: UInt32) -> SlotLists {
        Int(slot) < slotLists.count ? slotLists[Int(slot)] : SlotLists()
    }

    /// Sets the lists of the exact key in `slot`, growing the array to it.
    mutating func setLists(_ lists: SlotLists, of slot: UInt32) {
        if Int(slot) >= slotLists.count {
            slotLists.append(contentsOf: repeatElement(SlotLists(), count: Int(slot) + 1 - slotLists.count))
        }
        slotLists[Int(slot)] = lists
    }

    /// Adds a delta's per-release counts (`AggregateDelta.releases`) and sources
    /// (`releaseSources`, each counted as a new one). A release is kept with its exact key
    /// (whose counts the same delta carries, `apply`, which passes the keys it packed). The
    /// entries are summed per (key, release) before they reach the index, and a sum does not
    /// depend on their order: they are taken as the dictionaries hold them, unsorted.
    mutating func applyReleases(_ releases: [ReleaseBin: ReleaseCount], sources: [ReleaseKey: Set<SourceID>],
                                packed: [SeriesKey: PackedSeriesKey] = [:]) {
        guard !releases.isEmpty || !sources.isEmpty else { return }
        struct Touched: Hashable { var series: PackedSeriesKey; var minor: Int }
        var touched: [Touched: (major: Int, stats: ReleaseStats, sources: Set<SourceID>)] = [:]
        func touchedKey(_ series: SeriesKey, _ minor: Int) -> Touched? {
            let key = packed[series] ?? packedKey(series)
            // The OS major's id and the minor must each fit 16 bits (as `FieldRules` guarantees).
            guard key.os < 65_536, (0..<65_536).contains(minor) else { return nil }
            return Touched(series: key, minor: minor)
        }
        for (bin, count) in releases {
            guard let key = touchedKey(bin.series, bin.minor) else { continue }
            var entry = touched[key] ?? (bin.series.osMajor, ReleaseStats(), [])
            entry.stats.samples += count.samples
            if count.votes > 0 { entry.stats.votes.add(bin.halfPoints, count.votes) }
            touched[key] = entry
        }
        for (release, ids) in sources where !ids.isEmpty {
            guard let key = touchedKey(release.series, release.minor) else { continue }
            touched[key, default: (release.series.osMajor, ReleaseStats(), [])].sources.formUnion(ids)
        }
        // Every release joins its key first; then a key holding more than it keeps drops its
        // weakest (`releasesToDrop`), whatever the order the dictionaries hold them in.
        var grown: [UInt32: Int] = [:]
        for (key, entry) in touched {
            guard let slot = seriesSlots[key.series] else { continue }
            var lists = lists(of: slot)
            var position = lists.releases
            var held = 0
            while position != Self.noEntry, releasePool[Int(position)].minor != UInt16(key.minor) {
                held += 1
                position = releasePool[Int(position)].next
            }
            if position == Self.noEntry {
                if held >= Self.maxReleasesPerKey { grown[slot] = entry.major }
                position = Self.place(ReleaseEntry(stats: ReleaseStats(), minor: UInt16(key.minor), next: lists.releases),
                                      in: &releasePool, free: &freeRelease)
                lists.releases = position
                setLists(lists, of: slot)
                releaseMinorHolders[entry.major, default: [:]][key.minor, default: 0] += 1
            }
            releasePool[Int(position)].stats.samples += entry.stats.samples
            releasePool[Int(position)].stats.votes.merge(entry.stats.votes, limit: LevelStats.binLimit, keepingTies: true)
            if !entry.sources.isEmpty {
                let before = countsAsSupported(releasePool[Int(position)].stats.support)
                releasePool[Int(position)].stats.support.add(entry.sources)
                if !before && countsAsSupported(releasePool[Int(position)].stats.support) {
                    if supportedReleaseHolders[entry.major]?[key.minor] == nil { releaseDecisionsAdded += 1 }
                    supportedReleaseHolders[entry.major, default: [:]][key.minor, default: 0] += 1
                }
            }
        }
        for (slot, major) in grown {
            var held: [ReleaseStanding] = []
            forEachRelease(ofSlot: slot) {
                held.append(ReleaseStanding(minor: Int($0.minor), support: $0.stats.support, samples: $0.stats.samples))
            }
            for minor in Self.releasesToDrop(held) { removeRelease(minor: minor, ofSlot: slot, major: major) }
        }
    }

    /// Unlinks one release of the slot (its entry goes to the pool's free list).
    private mutating func removeRelease(minor: Int, ofSlot slot: UInt32, major: Int) {
        var lists = lists(of: slot)
        var previous = Self.noEntry
        var position = lists.releases
        while position != Self.noEntry, releasePool[Int(position)].minor != UInt16(minor) {
            previous = position
            position = releasePool[Int(position)].next
        }
        guard position != Self.noEntry else { return }
        let next = releasePool[Int(position)].next
        if countsAsSupported(releasePool[Int(position)].stats.support) { forgetSupported(minor, major: major) }
        if previous == Self.noEntry {
            lists.releases = next
            setLists(lists, of: slot)
        } else {
            releasePool[Int(previous)].next = next
        }
        releasePool[Int(position)] = ReleaseEntry(stats: ReleaseStats(), minor: 0, next: freeRelease)
        freeRelease = position
        forgetMinor(minor, major: major)
    }

    /// One entry fewer holds `major`.`minor` (`releaseMinors` lists the minors some key holds).
    private mutating func forgetMinor(_ minor: Int, major: Int) {
        releaseMinorHolders[major]?[minor, default: 1] -= 1
        if releaseMinorHolders[major]?[minor] == 0 { releaseMinorHolders[major]?[minor] = nil }
        if releaseMinorHolders[major]?.isEmpty == true { releaseMinorHolders[major] = nil }
    }

    /// One supported entry fewer holds `major`.`minor` (`supportedReleaseHolders`).
    private mutating func forgetSupported(_ minor: Int, major: Int) {
        supportedReleaseHolders[major]?[minor, default: 1] -= 1
        if supportedReleaseHolders[major]?[minor] == 0 { supportedReleaseHolders[major]?[minor] = nil }
        if supportedReleaseHolders[major]?.isEmpty == true { supportedReleaseHolders[major] = nil }
    }

    /// Whether an entry with this support counts in `supportedReleaseHolders`.
    func countsAsSupported(_ support: ReleaseSupport) -> Bool { support.satisfies(releaseSupportMinimum) }

    /// Sets the sources a release entry needs to count as supported (the estimator's
    /// `min_sources`; 1 by default, which never skips a release the estimator would count) and
    /// counts the entries again.
    public mutating func setReleaseSupportMinimum(_ minimum: Int) {
        guard minimum != releaseSupportMinimum else { return }
        releaseSupportMinimum = minimum
        supportedReleaseHolders = [:]
        releaseDecisionsAdded += 1
        for (key, slot) in seriesSlots {
            let major = strings[os: key.os]
            forEachRelease(ofSlot: slot) { entry in
                if countsAsSupported(entry.stats.support) {
                    supportedReleaseHolders[major, default: [:]][Int(entry.minor), default: 0] += 1
                }
            }
        }
    }

    /// Whether some key holds release `osMajor`.`minor` with `releaseSupportMinimum` sources of its
    /// own (or a trusted one). A release no key supports moved nothing: every model's say in its
    /// decision needs that support (`HeightEstimator.releaseDifference`), so the estimator skips it.
    public func releaseHasSupport(osMajor: Int, minor: Int) -> Bool {
        supportedReleaseHolders[osMajor]?[minor] != nil
    }

    /// Drops a removed exact key's releases (their entries go to the pool's free list).
    mutating func removeReleases(ofSlot slot: UInt32, major: Int) {
        var lists = lists(of: slot)
        var position = lists.releases
        guard position != Self.noEntry else { return }
        while position != Self.noEntry {
            let next = releasePool[Int(position)].next
            forgetMinor(Int(releasePool[Int(position)].minor), major: major)
            if countsAsSupported(releasePool[Int(position)].stats.support) {
                forgetSupported(Int(releasePool[Int(position)].minor), major: major)
            }
            releasePool[Int(position)] = ReleaseEntry(stats: ReleaseStats(), minor: 0, next: freeRelease)
            freeRelease = position
            position = next
        }
        lists.releases = Self.noEntry
        setLists(lists, of: slot)
    }

    /// (key, release) entries held (the release dimension's size).
    public var releaseCount: Int {
        var count = 0
        for slot in seriesSlots.values { forEachRelease(ofSlot: slot) { _ in count += 1 } }
        return count
    }

    /// The key's stats per OS release of its major, ascending by minor.
    public func releases(of key: SeriesKey) -> [(minor: Int, stats: ReleaseStats)] {
        guard let slot = slot(key) else { return [] }
        var found: [(minor: Int, stats: ReleaseStats)] = []
        forEachRelease(ofSlot: slot) { found.append((Int($0.minor), $0.stats)) }
        return found.sorted { $0.minor < $1.minor }
    }

    /// Calls `body` with each of the slot's release entries, in list order.
    func forEachRelease(ofSlot slot: UInt32, _ body: (ReleaseEntry) -> Void) {
        var position = lists(of: slot).releases
        while position != Self.noEntry {
            let entry = releasePool[Int(position)]
            body(entry)
            position = entry.next
        }
    }
}
