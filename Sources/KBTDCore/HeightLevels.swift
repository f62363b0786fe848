/// What the estimator reads: the live `HeightIndex`, or (for `kbtd evaluate`)
/// a view of it with some keys hidden. Lookups only; no I/O.
public protocol HeightLevels {
    /// `model+os+language` stats.
    func series(_ key: SeriesKey) -> LevelStats?
    /// `model+language` stats (any OS).
    func modelLanguage(_ key: ModelLanguageKey) -> LevelStats?
    /// `model` stats (any OS, any language).
    func model(_ key: ModelKey) -> LevelStats?
    /// The model's (language, orientation, type) keys.
    func languages(ofModel model: String) -> Set<ModelLanguageKey>
    /// Models with docked heights for a (language, orientation, type).
    func models(withLanguage key: LanguageKey) -> Set<String>
    /// Models that reported a screen size.
    func models(withScreen screen: ScreenSize) -> Set<String>
    /// The screen a model reported most often.
    func primaryScreen(of model: String) -> ScreenSize?
    /// Every OS major with docked heights.
    var osMajors: Set<Int> { get }
    /// The key's docked samples and votes per OS release of its major, ascending by minor.
    func releases(of key: SeriesKey) -> [(minor: Int, stats: ReleaseStats)]
    /// The key's docked samples and votes per reported screen, smallest first (`ScreenVariants.swift`).
    func screens(of key: SeriesKey) -> [(screen: ScreenSize, stats: ReleaseStats)]
    /// The latest UTC day with votes (nil: no per-day votes; the estimate's votes do not age).
    var latestVoteDay: Int? { get }
    /// The key's votes from UTC day `sinceDay` on (nil when it has none).
    func recentVotes(of key: SeriesKey, sinceDay: Int) -> CountHistogram?
    /// The distinct sources whose votes on the key weighed from UTC day `sinceDay` on.
    func recentSupport(of key: SeriesKey, sinceDay: Int) -> ReleaseSupport
    /// Whether a release moved a keyboard: `decide` over the histogram of the models' differences
    /// (`difference` of each model `models` lists; nil: the model does not count). The index keeps
    /// the differences per generation and recomputes only the models a change touched
    /// (`ReleaseMoveCache`); a view without a cache computes them all each time.
    func releaseMoved(_ key: ReleaseMoveKey, models: () -> [String], difference: (String) -> Int?,
                      decide: ([Int: Int]) -> Bool) -> Bool
    /// Whether some key holds release `osMajor`.`minor` with support of its own: a release none
    /// does moved nothing, and the estimator skips its decision (views: every release may).
    func releaseHasSupport(osMajor: Int, minor: Int) -> Bool
    /// The model's cold starts on an OS major (every major added together for nil); nil when it has none.
    func coldStarts(model: String, osMajor: Int?) -> ColdStartCounts?
}

extension HeightLevels {
    /// Levels without per-day votes answer from all-time votes.
    public var latestVoteDay: Int? { nil }
    public func recentVotes(of key: SeriesKey, sinceDay: Int) -> CountHistogram? { nil }
    public func recentSupport(of key: SeriesKey, sinceDay: Int) -> ReleaseSupport { ReleaseSupport() }
    public func releaseMoved(_ key: ReleaseMoveKey, models: () -> [String], difference: (String) -> Int?,
                             decide: ([Int: Int]) -> Bool) -> Bool {
        var histogram: [Int: Int] = [:]
        for model in models() {
            if let value = difference(model) { histogram[value, default: 0] += 1 }
        }
        return decide(histogram)
    }

    public func releaseHasSupport(osMajor: Int, minor: Int) -> Bool { true }

    /// Levels without cold starts (views for the backtest) have none.
    public func coldStarts(model: String, osMajor: Int?) -> ColdStartCounts? { nil }

    /// Levels without a release dimension (views that hide it) answer per OS major only.
    public func releases(of key: SeriesKey) -> [(minor: Int, stats: ReleaseStats)] { [] }

    /// Levels without a screen dimension answer every screen alike.
    public func screens(of key: SeriesKey) -> [(screen: ScreenSize, stats: ReleaseStats)] { [] }
}

extension HeightIndex: HeightLevels {
    public func coldStarts(model: String, osMajor: Int?) -> ColdStartCounts? {
        if let osMajor { return coldStartsByModel[ColdStartScope(model: model, osMajor: osMajor)] }
        var merged: ColdStartCounts?
        for major in osMajors {
            guard let counts = coldStartsByModel[ColdStartScope(model: model, osMajor: major)] else { continue }
            merged = merged ?? ColdStartCounts()
            merged!.merge(counts)
        }
        return merged
    }

    public func recentVotes(of key: SeriesKey, sinceDay: Int) -> CountHistogram? {
        slot(key).flatMap { dayVotes(ofSlot: $0, sinceDay: sinceDay) }
    }

    public func recentSupport(of key: SeriesKey, sinceDay: Int) -> ReleaseSupport {
        slot(key).map { daySupport(ofSlot: $0, sinceDay: sinceDay) } ?? ReleaseSupport()
    }

    public func releaseMoved(_ key: ReleaseMoveKey, models: () -> [String], difference: (String) -> Int?,
                             decide: ([Int: Int]) -> Bool) -> Bool {
        releaseMoves.moved(key, budget: releaseWorkBudget, models: models, difference: difference, decide: decide)
    }

    public func series(_ key: SeriesKey) -> LevelStats? {
        slot(key).map { slots[Int($0)] }
    }

    public func modelLanguage(_ key: ModelLanguageKey) -> LevelStats? {
        guard let packed = levelKey(model: key.model, language: key.language, orientation: key.orientation,
                                    keyboardType: key.keyboardType),
              let entry = modelLanguageSlots[packed] else { return nil }
        return slots[Int(entry.slot)]
    }

    public func model(_ key: ModelKey) -> LevelStats? {
        guard let packed = levelKey(model: key.model, language: nil, orientation: key.orientation, keyboardType: key.keyboardType),
              let entry = modelSlots[packed] else { return nil }
        return slots[Int(entry.slot)]
    }

    public func languages(ofModel model: String) -> Set<ModelLanguageKey> {
        guard let id = strings.id(model), let keys = modelLanguagesByModel[id] else { return [] }
        return Set(keys.map(modelLanguageKey))
    }

    public func models(withLanguage key: LanguageKey) -> Set<String> { modelsByLanguage[key] ?? [] }
    public func models(withScreen screen: ScreenSize) -> Set<String> { screens.models(withScreen: screen) }
    public func primaryScreen(of model: String) -> ScreenSize? { screens.primaryScreen(of: model) }
}

extension LevelStats {
    /// The stats of several keys as one level (counts add; sources are capped as usual).
    static func merged(_ parts: some Sequence<LevelStats>) -> LevelStats? {
        var result: LevelStats?
        for part in parts {
            if result == nil { result = part } else { result!.merge(part) }
        }
        return result
    }
}
