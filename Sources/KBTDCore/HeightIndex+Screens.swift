/// One key's docked samples, votes and support on one reported screen, linked into the index's
/// pool (`HeightIndex.screenPool`) as release entries are: no per-key dictionary entry or array.
struct ScreenEntry: PooledEntry, Sendable {
    var stats: ReleaseStats
    /// The screen, `width << 16 | height` (each at most 4096, `ScreenSize.problem`).
    var screen: UInt32
    /// The key's next screen entry, or `HeightIndex.noEntry`.
    var next: UInt32

    static func packed(_ screen: ScreenSize) -> UInt32 { UInt32(screen.width) << 16 | UInt32(screen.height) }
    var size: ScreenSize { ScreenSize(width: Int(screen >> 16), height: Int(screen & 0xFFFF)) }
}

extension HeightIndex {
    /// Adds a delta's per-screen counts (`AggregateDelta.screenCounts`) and sources
    /// (`screenSources`, each counted as a new one), kept with their exact key as releases are
    /// (`applyReleases`); a key holding more than `maxScreensPerKey` then drops its weakest.
    mutating func applyScreens(_ counts: [ScreenBin: ReleaseCount], sources: [ScreenVariantKey: Set<SourceID>],
                               packed: [SeriesKey: PackedSeriesKey] = [:]) {
        guard !counts.isEmpty || !sources.isEmpty else { return }
        struct Touched: Hashable { var series: PackedSeriesKey; var screen: UInt32 }
        var touched: [Touched: (stats: ReleaseStats, sources: Set<SourceID>)] = [:]
        for (bin, count) in counts {
            let key = Touched(series: packed[bin.series] ?? packedKey(bin.series), screen: ScreenEntry.packed(bin.screen))
            var entry = touched[key] ?? (ReleaseStats(), [])
            entry.stats.samples += count.samples
            if count.votes > 0 { entry.stats.votes.add(bin.halfPoints, count.votes) }
            touched[key] = entry
        }
        for (variant, ids) in sources where !ids.isEmpty {
            let key = Touched(series: packed[variant.series] ?? packedKey(variant.series), screen: ScreenEntry.packed(variant.screen))
            touched[key, default: (ReleaseStats(), [])].sources.formUnion(ids)
        }
        var grown: Set<UInt32> = []
        for (key, entry) in touched {
            guard let slot = seriesSlots[key.series] else { continue }
            var lists = lists(of: slot)
            var position = lists.screens
            var held = 0
            while position != Self.noEntry, screenPool[Int(position)].screen != key.screen {
                held += 1
                position = screenPool[Int(position)].next
            }
            if position == Self.noEntry {
                if held >= Self.maxScreensPerKey { grown.insert(slot) }
                position = Self.place(ScreenEntry(stats: ReleaseStats(), screen: key.screen, next: lists.screens),
                                      in: &screenPool, free: &freeScreen)
                lists.screens = position
                setLists(lists, of: slot)
            }
            screenPool[Int(position)].stats.samples += entry.stats.samples
            screenPool[Int(position)].stats.votes.merge(entry.stats.votes, limit: LevelStats.binLimit, keepingTies: true)
            if !entry.sources.isEmpty { screenPool[Int(position)].stats.support.add(entry.sources) }
        }
        for slot in grown {
            var held: [ScreenStanding] = []
            forEachScreen(ofSlot: slot) { held.append(ScreenStanding(screen: $0.size, support: $0.stats.support, samples: $0.stats.samples)) }
            for screen in Self.screensToDrop(held) { removeScreen(ScreenEntry.packed(screen), ofSlot: slot) }
        }
    }

    /// Unlinks one screen of the slot (its entry goes to the pool's free list).
    private mutating func removeScreen(_ screen: UInt32, ofSlot slot: UInt32) {
        var lists = lists(of: slot)
        var previous = Self.noEntry
        var position = lists.screens
        while position != Self.noEntry, screenPool[Int(position)].screen != screen {
            previous = position
            position = screenPool[Int(position)].next
        }
        guard position != Self.noEntry else { return }
        let next = screenPool[Int(position)].next
        if previous == Self.noEntry {
            lists.screens = next
            setLists(lists, of: slot)
        } else {
            screenPool[Int(previous)].next = next
        }
        screenPool[Int(position)] = ScreenEntry(stats: ReleaseStats(), screen: 0, next: freeScreen)
        freeScreen = position
    }

    /// Drops a removed exact key's screens (their entries go to the pool's free list).
    mutating func removeScreens(ofSlot slot: UInt32) {
        var lists = lists(of: slot)
        var position = lists.screens
        guard position != Self.noEntry else { return }
        while position != Self.noEntry {
            let next = screenPool[Int(position)].next
            screenPool[Int(position)] = ScreenEntry(stats: ReleaseStats(), screen: 0, next: freeScreen)
            freeScreen = position
            position = next
        }
        lists.screens = Self.noEntry
        setLists(lists, of: slot)
    }

    /// (key, screen) entries held (the screen dimension's size).
    public var screenVariantCount: Int {
        var count = 0
        for slot in seriesSlots.values { forEachScreen(ofSlot: slot) { _ in count += 1 } }
        return count
    }

    /// The key's stats per reported screen, smallest screen first.
    public func screens(of key: SeriesKey) -> [(screen: ScreenSize, stats: ReleaseStats)] {
        guard let slot = slot(key) else { return [] }
        var found: [(screen: ScreenSize, stats: ReleaseStats)] = []
        forEachScreen(ofSlot: slot) { found.append(($0.size, $0.stats)) }
        return found.sorted { $0.screen < $1.screen }
    }

    /// Calls `body` with each of the slot's screen entries, in list order.
    func forEachScreen(ofSlot slot: UInt32, _ body: (ScreenEntry) -> Void) {
        var position = lists(of: slot).screens
        while position != Self.noEntry {
            let entry = screenPool[Int(position)]
            body(entry)
            position = entry.next
        }
    }
}
