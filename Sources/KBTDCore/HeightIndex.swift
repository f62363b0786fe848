/// The in-memory index the height endpoints answer from. It holds every level
/// of the fallback chain pre-merged, so an answer is a few dictionary lookups.
/// The daemon's `LiveHeights` applies each commit's delta to it in place,
/// under its lock.
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
    }
}
