/// The in-memory index the height endpoints answer from. It holds every level
/// of the fallback chain pre-merged, so an answer is a few dictionary lookups.
/// The daemon's `LiveHeights` applies each commit's delta to it in place,
/// under its lock.
///
/// Compact, because it holds every key kbtd knows (a million keys must fit in
/// a few hundred MB):
/// - model, language and keyboard-type strings are held once each
///   (`IndexStrings`); keys are small structs of their numbers;
/// - every level's stats live in one array (`slots`); a level key maps to a slot;
/// - a `model+language` or `model` key fed by one exact key so far (one OS
///   major, one language) shares that key's slot instead of holding a copy:
///   both levels have merged the very same deltas in the same order, so their
///   stats are equal. The second exact key to feed it gives it its own slot,
///   starting from a copy of the shared one;
/// - `LevelStats` holds a key's usual single bin, source and animation inline.
public struct HeightIndex: Sendable {
    var strings = IndexStrings()
    /// Every level's stats; levels refer to them by position.
    var slots: [LevelStats] = []
    var seriesSlots = CompactMap<PackedSeriesKey, UInt32>()
    var modelLanguageSlots = CompactMap<PackedLevelKey, LevelSlot>()
    var modelSlots = CompactMap<PackedLevelKey, LevelSlot>()
    /// model → its model+language keys, in the order they appeared, for `/v1/heights`.
    var modelLanguagesByModel: [UInt32: [PackedLevelKey]] = [:]
    /// (language, orientation, type) → models with docked heights for it.
    public internal(set) var modelsByLanguage: [LanguageKey: Set<String>] = [:]
    /// Which screens each model reported (the `screen+language` level).
    public private(set) var screens = ScreenDirectory()
    /// Every OS major with docked heights (a handful), for the estimator's OS-shift check.
    public internal(set) var osMajors: Set<Int> = []
    /// Per exact key, by its slot: where its release entries and per-day votes start in their pools
    /// (`slotLists`, `releasePool`, `dayVotePool`: one array each, entries linked by position, freed
    /// entries reused first), so the release dimension and the ageing votes cost no dictionary entry
    /// or array per key (`Benchmarks/keys`).
    var slotLists: [SlotLists] = []
    /// Per exact key and OS release: docked samples and votes (`HeightIndex+Releases`).
    var releasePool: [ReleaseEntry] = []
    var freeRelease = HeightIndex.noEntry
    /// Per exact key and reported screen: docked samples and votes (`HeightIndex+Screens`).
    var screenPool: [ScreenEntry] = []
    var freeScreen = HeightIndex.noEntry
    /// OS major → minor → how many keys hold that release: a release leaves the list with the
    /// last key's entry, so minors a spray brought in and the keys dropped do not stay.
    var releaseMinorHolders: [Int: [Int: Int]] = [:]
    /// OS major → minor → how many keys hold that release with `releaseSupportMinimum` sources of
    /// their own (or a trusted one): the releases the estimator decides about. One network spraying
    /// minors adds entries (at most `maxReleasesPerKey` a key) but no decision.
    var supportedReleaseHolders: [Int: [Int: Int]] = [:]
    /// Sources an entry needs to count in `supportedReleaseHolders` (`setReleaseSupportMinimum`).
    public internal(set) var releaseSupportMinimum = 1
    /// OS major → the minors some key holds release data for (a handful).
    public var releaseMinors: [Int: Set<Int>] { releaseMinorHolders.mapValues { Set($0.keys) } }
    /// Per exact key: its votes per UTC day for the last `dayVoteDaysKept` days of data (`VoteAge.swift`).
    var dayVotePool: [DayVotes] = []
    var freeDayVote = HeightIndex.noEntry
    /// Per exact key: its latest voters and their latest days (`VoteAge.swift`).
    var daySourcePool: [DaySource] = []
    var freeDaySource = HeightIndex.noEntry
    /// Cold starts per (model, OS major), every key's added together (`ColdStarts.swift`). Kept
    /// from the counts the index loads and the commits it applies; a key that leaves the index
    /// leaves its cold starts here until the next start.
    var coldStartsByModel: [ColdStartScope: ColdStartCounts] = [:]
    /// The latest UTC day with votes: the end of every key's vote horizon (time is the data's, not a clock's).
    public internal(set) var latestVoteDay: Int?
    /// The estimator's release decisions for this generation of the index (a new one on every change).
    public internal(set) var releaseMoves = ReleaseMoveCache()
    /// Keyboards new to the index and releases newly supported, counted: each brings release
    /// decisions no walk has made yet (`HeightEstimator.settleReleaseDecisions` walks them all
    /// when this grew, and otherwise refreshes only the decisions a change made stale).
    public internal(set) var releaseDecisionsAdded = 0
    /// At most this many models' differences one release decision computes per question
    /// (`ReleaseMoveCache.moved`'s budget): unbounded by default; the daemon bounds it so that no
    /// answer holds its index lock for a walk over every model of a keyboard.
    public var releaseWorkBudget = Int.max

    public init() {}

    /// Exact keys (`model+os+language`) in the index.
    public var seriesCount: Int { seriesSlots.count }

    /// Adds a delta (a commit's counts, or the whole store at start-up).
    ///
    /// Its key sources (`sources`) are identities, merged with those the index holds; its release
    /// sources (`releaseSources`) are counted, each as a new source of its (key, release), since a
    /// release entry keeps a count, not identities (`ReleaseSupport`): give the index each
    /// (key, release, source) once. The stores do: a load passes each `release_sources` row once,
    /// a commit only the rows it added (`CommitPlan.indexDelta`).
    public mutating func apply(_ delta: AggregateDelta) {
        var touched: [SeriesKey: LevelStats] = [:]
        for (key, count) in delta.heights where key.placement == .docked {
            touched[key.series, default: LevelStats()].heights.add(key.halfPoints, count)
        }
        for (key, count) in delta.safeAreas {
            touched[key.series, default: LevelStats()].safeAreas.add(key.halfPoints, count)
        }
        for (key, count) in delta.votes {
            touched[key.series, default: LevelStats()].votes.add(key.halfPoints, count)
        }
        for (series, sources) in delta.sources {
            touched[series, default: LevelStats()].addSources(sources)
        }
        for (key, count) in delta.animations where key.event == .show {
            touched[key.series, default: LevelStats()].addShowAnimation(key.bin, count)
        }
        for (key, count) in delta.coldStarts {
            coldStartsByModel[ColdStartScope(model: key.series.model, osMajor: key.series.osMajor), default: ColdStartCounts()]
                .add(key, count)
        }
        // A key's one screen so far gets an entry of its own, from the key's stats before this
        // delta, when the delta brings it a second screen.
        splitSoleScreens(delta.screenCounts, sources: delta.screenSources)
        // In key order: where a level's bins, sources or animations pass their caps, what it
        // keeps depends on the order of its merges, which must not be a dictionary's
        // (per-instance, per-process) iteration order.
        // Each exact key's packed form, found once for this delta's release and day entries too.
        var packed: [SeriesKey: PackedSeriesKey] = [:]
        packed.reserveCapacity(touched.count)
        for series in touched.keys.sorted() {
            let stats = touched[series]!
            let seriesKey = packedKey(series)
            packed[series] = seriesKey
            let (model, language, kind) = (seriesKey.model, seriesKey.language, seriesKey.kind)
            let seriesSlot: UInt32
            if let slot = seriesSlots[seriesKey] {
                seriesSlot = slot
                slots[Int(slot)].merge(stats, keepingTies: true)
            } else {
                seriesSlot = Self.newSlot(LevelStats(), in: &slots)
                slots[Int(seriesSlot)].merge(stats, keepingTies: true)
                seriesSlots[seriesKey] = seriesSlot
            }
            let modelLanguage = PackedLevelKey(model: model, language: language, kind: kind)
            if Self.merge(stats, into: &modelLanguageSlots, modelLanguage, from: seriesSlot, slots: &slots) {
                modelLanguagesByModel[model, default: []].append(modelLanguage)
            }
            Self.merge(stats, into: &modelSlots, PackedLevelKey(model: model, language: PackedLevelKey.anyLanguage, kind: kind),
                       from: seriesSlot, slots: &slots)
            if stats.heights.total > 0 {
                let keyboard = LanguageKey(language: strings[language], orientation: series.orientation,
                                           keyboardType: strings[PackedLevelKey.keyboardType(of: kind)])
                if modelsByLanguage[keyboard] == nil { releaseDecisionsAdded += 1 }
                modelsByLanguage[keyboard, default: []].insert(strings[model])
                osMajors.insert(series.osMajor)
            }
        }
        for (key, count) in delta.screens { screens.add(model: key.model, screen: key.screen, count: count) }
        applyReleases(delta.releases, sources: delta.releaseSources, packed: packed)
        applyScreens(delta.screenCounts, sources: delta.screenSources, packed: packed)
        applyDayVotes(delta.dayVotes, packed: packed)
        applyDaySources(delta.daySources, packed: packed)
        // A release decision reads the keys of its keyboard and major that hold the release:
        // their stats (docked samples, votes, sources) and their releases. Only the scopes of
        // such keys this delta changed are stale in their scopes' decisions.
        var scopes: [ReleaseMoveScope: Set<String>] = [:]
        func touch(_ series: SeriesKey) {
            guard let slot = packed[series].flatMap({ seriesSlots[$0] }) ?? slot(series), lists(of: slot).releases != Self.noEntry else { return }
            scopes[ReleaseMoveScope(language: LanguageKey(language: series.language, orientation: series.orientation,
                                                          keyboardType: series.keyboardType),
                                    osMajor: series.osMajor), default: []].insert(series.model)
        }
        for series in touched.keys { touch(series) }
        for bin in delta.releases.keys where touched[bin.series] == nil { touch(bin.series) }
        for release in delta.releaseSources.keys where touched[release.series] == nil { touch(release.series) }
        releaseMoves = ReleaseMoveCache(keeping: releaseMoves, except: scopes)
    }

    /// An exact key's packed form, its strings interned.
    mutating func packedKey(_ series: SeriesKey) -> PackedSeriesKey {
        let kind = PackedLevelKey.kind(orientation: series.orientation, keyboardType: strings.intern(series.keyboardType))
        return PackedSeriesKey(model: strings.intern(series.model), language: strings.intern(series.language),
                               kind: kind, os: strings.intern(os: series.osMajor))
    }

    private static func newSlot(_ stats: LevelStats, in slots: inout [LevelStats]) -> UInt32 {
        slots.append(stats)
        return UInt32(slots.count - 1)
    }

    /// Merges one exact key's delta into a coarser level (the exact key's own
    /// slot, `seriesSlot`, already holds it); returns whether the level key is new.
    @discardableResult
    private static func merge(_ stats: LevelStats, into level: inout CompactMap<PackedLevelKey, LevelSlot>, _ key: PackedLevelKey,
                              from seriesSlot: UInt32, slots: inout [LevelStats]) -> Bool {
        guard let entry = level[key] else {
            // A new level key: so far it is exactly this exact key.
            level[key] = LevelSlot(slot: seriesSlot, shared: true)
            return true
        }
        if !entry.shared {
            slots[Int(entry.slot)].merge(stats, keepingTies: true)
        } else if entry.slot != seriesSlot {
            // A second exact key feeds this level: from now on it holds its own stats.
            var own = slots[Int(entry.slot)]
            own.merge(stats, keepingTies: true)
            level[key] = LevelSlot(slot: newSlot(own, in: &slots), shared: false)
        }
        return false
    }

    // MARK: lookups

    func slot(_ key: SeriesKey) -> UInt32? {
        guard let model = strings.id(key.model), let language = strings.id(key.language),
              let type = strings.id(key.keyboardType), let os = strings.id(os: key.osMajor) else { return nil }
        return seriesSlots[PackedSeriesKey(model: model, language: language,
                                           kind: PackedLevelKey.kind(orientation: key.orientation, keyboardType: type), os: os)]
    }

    func levelKey(model: String, language: String?, orientation: Orientation, keyboardType: String) -> PackedLevelKey? {
        guard let modelID = strings.id(model), let type = strings.id(keyboardType) else { return nil }
        let languageID: UInt32
        if let language {
            guard let id = strings.id(language) else { return nil }
            languageID = id
        } else {
            languageID = PackedLevelKey.anyLanguage
        }
        return PackedLevelKey(model: modelID, language: languageID,
                              kind: PackedLevelKey.kind(orientation: orientation, keyboardType: type))
    }

    func seriesKey(_ key: PackedSeriesKey) -> SeriesKey {
        SeriesKey(model: strings[key.model], osMajor: strings[os: key.os], language: strings[key.language],
                  orientation: PackedLevelKey.orientation(of: key.kind),
                  keyboardType: strings[PackedLevelKey.keyboardType(of: key.kind)])
    }

    func modelLanguageKey(_ key: PackedLevelKey) -> ModelLanguageKey {
        ModelLanguageKey(model: strings[key.model], language: strings[key.language],
                         orientation: PackedLevelKey.orientation(of: key.kind),
                         keyboardType: strings[PackedLevelKey.keyboardType(of: key.kind)])
    }
}

/// Where a coarser level's stats are: its own slot, or (`shared`) the slot of
/// the one exact key that fed it so far.
struct LevelSlot: Sendable {
    var slot: UInt32
    var shared: Bool
}

// MARK: views kept for callers that read the index as dictionaries

extension HeightIndex {
    /// The `model+os+language` level as a read-only dictionary.
    public var bySeries: SeriesLevelView { SeriesLevelView(index: self) }
    /// The `model+language` level as a read-only dictionary.
    public var byModelLanguage: ModelLanguageLevelView { ModelLanguageLevelView(index: self) }
    /// The `model` level as a read-only dictionary.
    public var byModel: ModelLevelView { ModelLevelView(index: self) }
    /// model → its model+language keys.
    public var keysByModel: KeysByModelView { KeysByModelView(index: self) }
}

/// `HeightIndex.bySeries`: lookups are cheap; `keys`, `values` and iteration build arrays.
public struct SeriesLevelView: Sequence, Sendable {
    let index: HeightIndex

    public subscript(key: SeriesKey) -> LevelStats? { index.series(key) }
    public var count: Int { index.seriesSlots.count }
    public var isEmpty: Bool { index.seriesSlots.isEmpty }
    public var keys: [SeriesKey] { index.seriesSlots.keys.map(index.seriesKey) }
    public var values: [LevelStats] { index.seriesSlots.values.map { index.slots[Int($0)] } }

    public func makeIterator() -> IndexingIterator<[(key: SeriesKey, value: LevelStats)]> {
        index.seriesSlots.map { (key: index.seriesKey($0.key), value: index.slots[Int($0.value)]) }.makeIterator()
    }
}

/// `HeightIndex.byModelLanguage`.
public struct ModelLanguageLevelView: Sendable {
    let index: HeightIndex

    public subscript(key: ModelLanguageKey) -> LevelStats? { index.modelLanguage(key) }
    public var count: Int { index.modelLanguageSlots.count }
    public var keys: [ModelLanguageKey] { index.modelLanguageSlots.keys.map(index.modelLanguageKey) }
}

/// `HeightIndex.byModel`.
public struct ModelLevelView: Sendable {
    let index: HeightIndex

    public subscript(key: ModelKey) -> LevelStats? { index.model(key) }
    public var count: Int { index.modelSlots.count }
}

/// `HeightIndex.keysByModel`.
public struct KeysByModelView: Sendable {
    let index: HeightIndex

    public subscript(model: String) -> Set<ModelLanguageKey>? {
        guard let id = index.strings.id(model), let keys = index.modelLanguagesByModel[id] else { return nil }
        return Set(keys.map(index.modelLanguageKey))
    }

    public var keys: [String] { index.modelLanguagesByModel.keys.map { index.strings[$0] } }
    public var count: Int { index.modelLanguagesByModel.count }
}

/// An entry of one of the index's pools (releases, per-day votes, per-day sources): linked to the
/// key's next entry, or, once freed, to the pool's next free entry.
protocol PooledEntry {
    var next: UInt32 { get }
}

extension HeightIndex {
    /// Stores `entry` in `pool`, in the first free place (`free` heads the free list) or at the
    /// end; its position.
    static func place<Entry: PooledEntry>(_ entry: Entry, in pool: inout [Entry], free: inout UInt32) -> UInt32 {
        guard free != noEntry else {
            pool.append(entry)
            return UInt32(pool.count - 1)
        }
        let position = free
        free = pool[Int(position)].next
        pool[Int(position)] = entry
        return position
    }
}
