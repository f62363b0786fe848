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
    /// A key's screen list head (`SlotLists.screens`) with this bit set is the one screen the key
    /// has reported, packed, with no pool entry: its stats are the key's own. Most keys come from
    /// one screen (every phone at standard zoom), so the screen dimension costs them no memory; a
    /// key's entries are made when a second screen arrives (`splitSoleScreens`).
    static let soleScreenTag: UInt32 = 0x8000_0000

    static func isSoleScreen(_ head: UInt32) -> Bool { head != noEntry && head & soleScreenTag != 0 }

    /// The stats of a key's one screen: the key's own (docked samples, votes, sources).
    func soleScreenStats(ofSlot slot: UInt32) -> ReleaseStats {
        let whole = slots[Int(slot)]
        var stats = ReleaseStats()
        stats.samples = whole.heights.total
        stats.votes = whole.votes
        stats.support = ReleaseSupport(sources: whole.sources.count, trusted: whole.sources.contains(.trusted))
        return stats
    }

    /// Gives each key that has reported one screen so far, and that this delta brings another
    /// screen, a pool entry for that screen with the key's stats before the delta (call it before
    /// the delta's counts are merged into the keys). Exact when every batch of the key named its
    /// screen (the client always does); counts from batches without `device.screen` stay with the
    /// first screen until a restart, which loads each screen's own rows.
    mutating func splitSoleScreens(_ counts: [ScreenBin: ReleaseCount], sources: [ScreenVariantKey: Set<SourceID>]) {
        guard !counts.isEmpty || !sources.isEmpty else { return }
        var screensBySeries: [SeriesKey: Set<UInt32>] = [:]
        for bin in counts.keys { screensBySeries[bin.series, default: []].insert(ScreenEntry.packed(bin.screen)) }
        for variant in sources.keys { screensBySeries[variant.series, default: []].insert(ScreenEntry.packed(variant.screen)) }
        for (series, screens) in screensBySeries {
            guard let slot = slot(series) else { continue }
            var lists = lists(of: slot)
            guard Self.isSoleScreen(lists.screens) else { continue }
            let sole = lists.screens & ~Self.soleScreenTag
            guard screens.contains(where: { $0 != sole }) else { continue }
            lists.screens = Self.place(ScreenEntry(stats: soleScreenStats(ofSlot: slot), screen: sole, next: Self.noEntry),
                                       in: &screenPool, free: &freeScreen)
            setLists(lists, of: slot)
        }
    }

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
        var screensBySlot: [UInt32: Set<UInt32>] = [:]
        for key in touched.keys {
            if let slot = seriesSlots[key.series] { screensBySlot[slot, default: []].insert(key.screen) }
        }
        var grown: Set<UInt32> = []
        for (key, entry) in touched {
            guard let slot = seriesSlots[key.series] else { continue }
            var lists = lists(of: slot)
            // A key's first and only screen keeps no entry (`soleScreenTag`); the same one again adds
            // nothing to keep (its stats are the key's).
            if lists.screens == Self.noEntry && screensBySlot[slot]?.count == 1 {
                lists.screens = Self.soleScreenTag | key.screen
                setLists(lists, of: slot)
                continue
            }
            if Self.isSoleScreen(lists.screens) && lists.screens & ~Self.soleScreenTag == key.screen { continue }
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
        var position = Self.isSoleScreen(lists.screens) ? Self.noEntry : lists.screens
        guard lists.screens != Self.noEntry else { return }
        while position != Self.noEntry {
            let next = screenPool[Int(position)].next
            screenPool[Int(position)] = ScreenEntry(stats: ReleaseStats(), screen: 0, next: freeScreen)
            freeScreen = position
            position = next
        }
        lists.screens = Self.noEntry
        setLists(lists, of: slot)
    }

    /// (key, screen) pairs held (the screen dimension's size), a key's one screen included.
    public var screenVariantCount: Int {
        var count = 0
        for slot in seriesSlots.values { forEachScreen(ofSlot: slot) { _ in count += 1 } }
        return count
    }

    /// (key, screen) entries in the pool: keys that reported more than one screen.
    public var screenEntryCount: Int {
        var count = 0
        for slot in seriesSlots.values where !Self.isSoleScreen(lists(of: slot).screens) {
            forEachScreen(ofSlot: slot) { _ in count += 1 }
        }
        return count
    }

    /// The key's stats per reported screen, smallest screen first.
    public func screens(of key: SeriesKey) -> [(screen: ScreenSize, stats: ReleaseStats)] {
        guard let slot = slot(key) else { return [] }
        var found: [(screen: ScreenSize, stats: ReleaseStats)] = []
        forEachScreen(ofSlot: slot) { found.append(($0.size, $0.stats)) }
        return found.sorted { $0.screen < $1.screen }
    }

    /// Calls `body` with each of the slot's screens, in list order (a key's one screen as an
    /// entry made of the key's stats).
    func forEachScreen(ofSlot slot: UInt32, _ body: (ScreenEntry) -> Void) {
        var position = lists(of: slot).screens
        if Self.isSoleScreen(position) {
            body(ScreenEntry(stats: soleScreenStats(ofSlot: slot), screen: position & ~Self.soleScreenTag, next: Self.noEntry))
            return
        }
        while position != Self.noEntry {
            let entry = screenPool[Int(position)]
            body(entry)
            position = entry.next
        }
    }
}
