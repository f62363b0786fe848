/// Key of the `model+language` level: any OS.
public struct ModelLanguageKey: Hashable, Sendable, Comparable {
    public var model: String
    public var language: String
    public var orientation: Orientation
    public var keyboardType: String

    public init(model: String, language: String, orientation: Orientation, keyboardType: String) {
        self.model = model
        self.language = language
        self.orientation = orientation
        self.keyboardType = keyboardType
    }

    public static func < (a: Self, b: Self) -> Bool {
        (a.model, a.language, a.orientation.rawValue, a.keyboardType) < (b.model, b.language, b.orientation.rawValue, b.keyboardType)
    }
}

/// Key of the `model` level: any OS, any language.
public struct ModelKey: Hashable, Sendable {
    public var model: String
    public var orientation: Orientation
    public var keyboardType: String
}

/// Key used to find the other models that measured a language.
public struct LanguageKey: Hashable, Sendable {
    public var language: String
    public var orientation: Orientation
    public var keyboardType: String
}

/// How often one (duration, curve) animated a show.
public struct AnimationCount: Sendable, Equatable {
    public var bin: AnimationBin
    public var count: Int64
}

/// What one level of the fallback chain knows about one key.
public struct LevelStats: Sendable, Equatable {
    /// Docked system heights (accessory removed), in half points: every sample.
    public var heights = CountHistogram()
    /// The same bins as the estimator weighs them (capped per untrusted source).
    public var votes = CountHistogram()
    /// Sources that reported docked heights here, at most `LevelStats.sourceLimit` kept.
    public private(set) var sources: [SourceID] = []
    static let sourceLimit = 8
    /// Docked bottom safe areas, in half points.
    public var safeAreas = CountHistogram()
    /// Animation of `show` events.
    public private(set) var showAnimations: [AnimationCount] = []

    public init() {}

    /// Bins one histogram of the index keeps (see `CountHistogram.merge(_:limit:)`).
    static let binLimit = 8

    mutating func merge(_ other: LevelStats) {
        heights.merge(other.heights, limit: Self.binLimit)
        votes.merge(other.votes, limit: Self.binLimit)
        addSources(other.sources)
        safeAreas.merge(other.safeAreas, limit: Self.binLimit)
        for entry in other.showAnimations { addShowAnimation(entry.bin, entry.count) }
    }

    mutating func addSources(_ new: Set<SourceID>) {
        for source in new.sorted() where !sources.contains(source) {
            if sources.count < Self.sourceLimit || source == .trusted { sources.append(source) }
        }
    }

    mutating func addSources(_ new: [SourceID]) { addSources(Set(new)) }

    mutating func addShowAnimation(_ bin: AnimationBin, _ count: Int64) {
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
    func hasSources(_ minimum: Int) -> Bool {
        sources.contains(.trusted) || sources.count >= minimum
    }

    /// The most frequent (duration, curve); ties go to the shorter duration then lower curve.
    var animationMode: AnimationBin? {
        showAnimations.max { a, b in
            (a.count, -a.bin.durationMs, -a.bin.curve) < (b.count, -b.bin.durationMs, -b.bin.curve)
        }?.bin
    }
}

/// The in-memory index the height endpoints answer from. It holds every level
/// of the fallback chain pre-merged, so an answer is a few dictionary lookups;
/// the writer applies each commit's delta to a copy and publishes it.
public struct HeightIndex: Sendable {
    public private(set) var bySeries: [SeriesKey: LevelStats] = [:]
    public private(set) var byModelLanguage: [ModelLanguageKey: LevelStats] = [:]
    public private(set) var byModel: [ModelKey: LevelStats] = [:]
    /// (language, orientation, type) → models with docked heights for it.
    public private(set) var modelsByLanguage: [LanguageKey: Set<String>] = [:]
    /// model → its model+language keys, for `/v1/heights`.
    public private(set) var keysByModel: [String: Set<ModelLanguageKey>] = [:]
    /// Which screens each model reported (the `screen+language` level).
    public private(set) var screens = ScreenDirectory()
    /// Every OS major with docked heights (a handful), for the estimator's OS-shift check.
    public private(set) var osMajors: Set<Int> = []
    /// Bumped by every `apply`, so caches know when to drop answers.
    public private(set) var generation: UInt64 = 0

    public init() {}

    /// Adds a delta (a commit's counts, or the whole store at start-up).
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
        for (series, stats) in touched {
            bySeries[series, default: LevelStats()].merge(stats)
            let modelLanguage = ModelLanguageKey(model: series.model, language: series.language,
                                                 orientation: series.orientation, keyboardType: series.keyboardType)
            byModelLanguage[modelLanguage, default: LevelStats()].merge(stats)
            byModel[ModelKey(model: series.model, orientation: series.orientation, keyboardType: series.keyboardType),
                    default: LevelStats()].merge(stats)
            keysByModel[series.model, default: []].insert(modelLanguage)
            if stats.heights.total > 0 {
                modelsByLanguage[LanguageKey(language: series.language, orientation: series.orientation,
                                             keyboardType: series.keyboardType), default: []].insert(series.model)
                osMajors.insert(series.osMajor)
            }
        }
        for (key, count) in delta.screens { screens.add(model: key.model, screen: key.screen, count: count) }
        generation &+= 1
    }
}
