/// One key's docked samples, votes and support on one OS release, linked into the index's pool
/// (`HeightIndex.releasePool`): 40 bytes (the support sits in what was padding before the minor),
/// with no per-key dictionary entry or array.
struct ReleaseEntry: Sendable {
    var stats: ReleaseStats
    /// The release's minor (`FieldRules` allows at most 4 digits per part).
    var minor: UInt16
    /// The key's next release entry, or `HeightIndex.noEntry`.
    var next: UInt32
}

/// Where an exact key's pooled lists start (`HeightIndex.slotLists`, by the key's slot):
/// its release entries, its per-day votes and its latest voters, each `HeightIndex.noEntry` when it has none.
struct SlotLists: Sendable {
    var releases = HeightIndex.noEntry
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

    /// Releases the index keeps per key (docs/fallback-chain.md, "Point releases"). An OS major
    /// has had at most 7 point releases so far; a client spraying minors must not grow a key,
    /// or the estimator's work for it, without bound. Past it a new release takes the place of
    /// the key's weakest one (fewest sources, untrusted, fewest samples, then the oldest minor):
    /// a release with support of its own outlasts any number of one network's. A dropped
    /// release's samples still count for the OS major, as every release's do, and the store
    /// keeps its rows.
    public static let maxReleasesPerKey = 16

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
        // Weakest first within a key, so that a key given more releases than it keeps (a load)
        // ends with its strongest ones whatever the dictionary's order.
        let ordered = touched.sorted { a, b in
            let (p, q) = (a.key.series, b.key.series)
            if p != q { return (p.model, p.language, p.kind, p.os) < (q.model, q.language, q.kind, q.os) }
            let (x, y) = (a.value.stats.samples, b.value.stats.samples)
            let (sa, sb) = (ReleaseSupport.counting(a.value.sources), ReleaseSupport.counting(b.value.sources))
            return (sa.strength, x, a.key.minor) < (sb.strength, y, b.key.minor)
        }
        for (key, entry) in ordered {
            releaseMinors[entry.major, default: []].insert(key.minor)
            guard let slot = seriesSlots[key.series] else { continue }
            var lists = lists(of: slot)
            var position = lists.releases
            var held = 0
            while position != Self.noEntry, releasePool[Int(position)].minor != UInt16(key.minor) {
                held += 1
                position = releasePool[Int(position)].next
            }
            if position == Self.noEntry, held >= Self.maxReleasesPerKey {
                // Full: the weakest release gives way to a new one at least as strong (a tie: the
                // newer data), and its entry takes the new one; a weaker new one is not kept.
                let weakest = weakestRelease(ofSlot: slot)
                let kept = releasePool[Int(weakest)].stats
                guard (ReleaseSupport.counting(entry.sources).strength, entry.stats.samples)
                        >= (kept.support.strength, kept.samples) else { continue }
                position = weakest
                releasePool[Int(position)].stats = ReleaseStats()
                releasePool[Int(position)].minor = UInt16(key.minor)
            } else if position == Self.noEntry {
                let new = ReleaseEntry(stats: ReleaseStats(), minor: UInt16(key.minor), next: lists.releases)
                if freeRelease != Self.noEntry {
                    position = freeRelease
                    freeRelease = releasePool[Int(position)].next
                    releasePool[Int(position)] = new
                } else {
                    position = UInt32(releasePool.count)
                    releasePool.append(new)
                }
                lists.releases = position
                setLists(lists, of: slot)
            }
            releasePool[Int(position)].stats.samples += entry.stats.samples
            releasePool[Int(position)].stats.votes.merge(entry.stats.votes, limit: LevelStats.binLimit, keepingTies: true)
            if !entry.sources.isEmpty { releasePool[Int(position)].stats.support.add(entry.sources) }
        }
    }

    /// The position of the slot's weakest release entry: fewest sources (a trusted one counting
    /// as the most), then fewest samples, then the lowest minor.
    private func weakestRelease(ofSlot slot: UInt32) -> UInt32 {
        var weakest = Self.noEntry
        var position = lists(of: slot).releases
        while position != Self.noEntry {
            let entry = releasePool[Int(position)]
            if weakest == Self.noEntry {
                weakest = position
            } else {
                let other = releasePool[Int(weakest)]
                if (entry.stats.support.strength, entry.stats.samples, entry.minor)
                    < (other.stats.support.strength, other.stats.samples, other.minor) { weakest = position }
            }
            position = entry.next
        }
        return weakest
    }

    /// Drops a removed exact key's releases (their entries go to the pool's free list).
    mutating func removeReleases(ofSlot slot: UInt32) {
        var lists = lists(of: slot)
        var position = lists.releases
        guard position != Self.noEntry else { return }
        while position != Self.noEntry {
            let next = releasePool[Int(position)].next
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
