@testable import KBTDCore

// The height index as it was before it was made compact (kbtd at d0ad97f):
// dictionaries of full keys, each level its own stats, every histogram a
// heap array. Kept only as the reference `CompactIndexTests` compares the
// compact `HeightIndex` against, answer by answer. One change, made in both:
// a delta's keys are merged in key order, not in a dictionary's iteration
// order (which differs between two dictionaries with the same keys, so past a
// level's caps the old index's answers depended on it). A second, also made in
// both: a merge that brings another bin level with the mode leaves the mode
// where it was (the incumbent keeps its tie).

/// Counts per integer bin (half points for heights, log buckets for latency,
/// milliseconds for durations), with the mode and nearest-rank percentiles.
///
/// Kept as one small array of (bin, count) sorted by bin, not a dictionary: a
/// key almost always has one to three bins, and the index holds millions of
/// histograms, so a dictionary's allocation per histogram dominated memory.
package struct ReferenceHistogram: Sendable {
    package struct Entry: Sendable, Equatable {
        package var bin: Int
        package var count: Int64
    }

    package private(set) var entries: [Entry] = []
    public private(set) var total: Int64 = 0
    /// The mode before the last `merge(_:limit:keepingTies:)`, when that merge left it tied at the top.
    private var incumbent: Int?
    package var incumbentBin: Int? { incumbent }
    /// Distinct bins held.
    public var binCount: Int { entries.count }

    public init() {}

    public init(_ counts: [Int: Int64]) {
        for (bin, count) in counts { add(bin, count) }
    }

    public mutating func add(_ bin: Int, _ count: Int64 = 1) {
        guard count != 0 else { return }
        var low = 0, high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].bin < bin { low = middle + 1 } else { high = middle }
        }
        if low < entries.count && entries[low].bin == bin {
            entries[low].count += count
        } else {
            entries.insert(Entry(bin: bin, count: count), at: low)
        }
        total += count
    }

    public mutating func merge(_ other: ReferenceHistogram) {
        for entry in other.entries { add(entry.bin, entry.count) }
    }

    /// Adds `other` keeping at most `limit` bins: a new bin past the limit
    /// replaces the least frequent one when it is more frequent, else only
    /// `total` counts it. Real keys have one to three bins; the limit keeps a
    /// client that sprays every height from growing the index without bound,
    /// while the mode (what is served) survives.
    public mutating func merge(_ other: ReferenceHistogram, limit: Int, keepingTies: Bool = false) {
        let before = mode
        defer {
            incumbent = nil
            // As the compact histogram: a single bin holding the whole total keeps no incumbent.
            if keepingTies, let before, !(entries.count == 1 && entries[0].count == total),
               let held = entries.first(where: { $0.bin == before })?.count, !entries.contains(where: { $0.count > held }) {
                incumbent = before
            }
        }
        for entry in other.entries {
            if entries.count < limit || entries.contains(where: { $0.bin == entry.bin }) {
                add(entry.bin, entry.count)
            } else if let weakest = entries.indices.min(by: { entries[$0].count < entries[$1].count }),
                      entries[weakest].count < entry.count {
                entries.remove(at: weakest)  // its count stays in `total`
                add(entry.bin, entry.count)
            } else {
                total += entry.count
            }
        }
    }

    /// The most frequent bin; on a tie the larger bin wins, because a keyboard
    /// estimate that is too tall leaves a gap while one too short hides the input bar.
    public var mode: Int? {
        var best: Entry?
        for entry in entries where entry.count > 0 {
            if let current = best, entry.count < current.count { continue }
            best = entry  // bins ascend: an equal count later is a larger bin
        }
        if let incumbent, let best, entries.first(where: { $0.bin == incumbent && $0.count > 0 })?.count == best.count {
            return incumbent
        }
        return best?.bin
    }

    /// Nearest-rank percentile (`q` in 0...1): the smallest bin whose
    /// cumulative count reaches ceil(q × total).
    public func percentile(_ q: Double) -> Int? {
        guard total > 0 else { return nil }
        let rank = max(1, Int64((q * Double(total)).rounded(.up)))
        var cumulative: Int64 = 0
        for entry in entries {
            cumulative += entry.count
            if cumulative >= rank { return entry.bin }
        }
        return entries.last?.bin
    }
}

/// What one level of the fallback chain knows about one key.
package struct ReferenceLevelStats: Sendable, Equatable {
    /// Docked system heights (accessory removed), in half points: every sample.
    public var heights = ReferenceHistogram()
    /// The same bins as the estimator weighs them (capped per untrusted source).
    public var votes = ReferenceHistogram()
    /// Sources that reported docked heights here, at most `ReferenceLevelStats.sourceLimit` kept.
    public private(set) var sources: [SourceID] = []
    package static let sourceLimit = 8
    /// Docked bottom safe areas, in half points.
    public var safeAreas = ReferenceHistogram()
    /// Animation of `show` events.
    public private(set) var showAnimations: [AnimationCount] = []

    public init() {}

    /// Bins one histogram of the index keeps (see `ReferenceHistogram.merge(_:limit:)`).
    package static let binLimit = 8

    package mutating func merge(_ other: ReferenceLevelStats, keepingTies: Bool = false) {
        heights.merge(other.heights, limit: Self.binLimit, keepingTies: keepingTies)
        votes.merge(other.votes, limit: Self.binLimit, keepingTies: keepingTies)
        addSources(other.sources)
        safeAreas.merge(other.safeAreas, limit: Self.binLimit, keepingTies: keepingTies)
        for entry in other.showAnimations { addShowAnimation(entry.bin, entry.count) }
    }

    package mutating func addSources(_ new: Set<SourceID>) {
        for source in new.sorted() where !sources.contains(source) {
            if sources.count < Self.sourceLimit || source == .trusted { sources.append(source) }
        }
    }

    package mutating func addSources(_ new: [SourceID]) { addSources(Set(new)) }

    package mutating func addShowAnimation(_ bin: AnimationBin, _ count: Int64) {
        if let index = showAnimations.firstIndex(where: { $0.bin == bin }) {
            showAnimations[index].count += count
        } else if showAnimations.count < Self.binLimit {
            showAnimations.append(AnimationCount(bin: bin, count: count))
        } else if let weakest = showAnimations.indices.min(by: { showAnimations[$0].count < showAnimations[$1].count }),
                  showAnimations[weakest].count < count {
            // Bounded like the histograms: the least frequent (duration, curve) gives way.
            showAnimations[weakest] = AnimationCount(bin: bin, count: count)
        }
    }

    /// Whether enough independent sources stand behind this level.
    package func hasSources(_ minimum: Int) -> Bool {
        sources.contains(.trusted) || sources.count >= minimum
    }

    /// The most frequent (duration, curve); ties go to the shorter duration then lower curve.
    package var animationMode: AnimationBin? {
        showAnimations.max { a, b in
            (a.count, -a.bin.durationMs, -a.bin.curve) < (b.count, -b.bin.durationMs, -b.bin.curve)
        }?.bin
    }
}

/// The in-memory index the height endpoints answer from. It holds every level
/// of the fallback chain pre-merged, so an answer is a few dictionary lookups.
/// The daemon's `LiveHeights` applies each commit's delta to it in place,
/// under its lock.
package struct ReferenceHeightIndex: Sendable {
    package private(set) var bySeries: [SeriesKey: ReferenceLevelStats] = [:]
    package private(set) var byModelLanguage: [ModelLanguageKey: ReferenceLevelStats] = [:]
    package private(set) var byModel: [ModelKey: ReferenceLevelStats] = [:]
    /// (language, orientation, type) → models with docked heights for it.
    package private(set) var modelsByLanguage: [LanguageKey: Set<String>] = [:]
    /// model → its model+language keys, for `/v1/heights`.
    package private(set) var keysByModel: [String: Set<ModelLanguageKey>] = [:]
    /// Which screens each model reported (the `screen+language` level).
    package private(set) var screens = ScreenDirectory()
    /// Every OS major with docked heights (a handful), for the estimator's OS-shift check.
    package private(set) var osMajors: Set<Int> = []

    package init() {}

    /// Adds a delta (a commit's counts, or the whole store at start-up).
    package mutating func apply(_ delta: AggregateDelta) {
        var touched: [SeriesKey: ReferenceLevelStats] = [:]
        for (key, count) in delta.heights where key.placement == .docked {
            touched[key.series, default: ReferenceLevelStats()].heights.add(key.halfPoints, count)
        }
        for (key, count) in delta.safeAreas {
            touched[key.series, default: ReferenceLevelStats()].safeAreas.add(key.halfPoints, count)
        }
        for (key, count) in delta.votes {
            touched[key.series, default: ReferenceLevelStats()].votes.add(key.halfPoints, count)
        }
        for (series, sources) in delta.sources {
            touched[series, default: ReferenceLevelStats()].addSources(sources)
        }
        for (key, count) in delta.animations where key.event == .show {
            touched[key.series, default: ReferenceLevelStats()].addShowAnimation(key.bin, count)
        }
        // In key order: where a level's bins, sources or animations pass their caps, what it
        // keeps depends on the order of its merges, which must not be a dictionary's
        // (per-instance, per-process) iteration order.
        for series in touched.keys.sorted() {
            let stats = touched[series]!
            bySeries[series, default: ReferenceLevelStats()].merge(stats, keepingTies: true)
            let modelLanguage = ModelLanguageKey(model: series.model, language: series.language,
                                                 orientation: series.orientation, keyboardType: series.keyboardType)
            byModelLanguage[modelLanguage, default: ReferenceLevelStats()].merge(stats, keepingTies: true)
            byModel[ModelKey(model: series.model, orientation: series.orientation, keyboardType: series.keyboardType),
                    default: ReferenceLevelStats()].merge(stats, keepingTies: true)
            keysByModel[series.model, default: []].insert(modelLanguage)
            if stats.heights.total > 0 {
                modelsByLanguage[LanguageKey(language: series.language, orientation: series.orientation,
                                             keyboardType: series.keyboardType), default: []].insert(series.model)
                osMajors.insert(series.osMajor)
            }
        }
        for (key, count) in delta.screens { screens.add(model: key.model, screen: key.screen, count: count) }
    }
}

extension LevelStats {
    /// The compact form of a reference level's stats, part for part.
    package init(_ reference: ReferenceLevelStats) {
        func histogram(_ old: ReferenceHistogram) -> CountHistogram {
            CountHistogram(entries: old.entries.map { CountHistogram.Entry(bin: $0.bin, count: $0.count) }, total: old.total,
                           incumbent: old.incumbentBin)
        }
        self.init(heights: histogram(reference.heights), votes: histogram(reference.votes),
                  safeAreas: histogram(reference.safeAreas), sources: reference.sources,
                  showAnimations: reference.showAnimations)
    }
}

extension ReferenceHeightIndex: HeightLevels {
    package func series(_ key: SeriesKey) -> LevelStats? { bySeries[key].map(LevelStats.init) }
    package func modelLanguage(_ key: ModelLanguageKey) -> LevelStats? { byModelLanguage[key].map(LevelStats.init) }
    package func model(_ key: ModelKey) -> LevelStats? { byModel[key].map(LevelStats.init) }
    package func languages(ofModel model: String) -> Set<ModelLanguageKey> { keysByModel[model] ?? [] }
    package func models(withLanguage key: LanguageKey) -> Set<String> { modelsByLanguage[key] ?? [] }
    package func models(withScreen screen: ScreenSize) -> Set<String> { screens.models(withScreen: screen) }
    package func primaryScreen(of model: String) -> ScreenSize? { screens.primaryScreen(of: model) }
}

extension ReferenceHistogram: Equatable {
    package static func == (a: ReferenceHistogram, b: ReferenceHistogram) -> Bool { a.entries == b.entries && a.total == b.total }
}
