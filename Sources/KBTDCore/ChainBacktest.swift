/// `kbtd evaluate`: how wrong each level of the fallback chain is on the
/// database's own data. Every key (model, OS major, language, orientation,
/// type) whose own level could answer is a case; its mode is the truth. The
/// case is asked three times, each time with more hidden, so every level gets
/// questions it would really face:
///
/// 1. the key itself hidden: what a new OS major gets (usually `model+language`);
/// 2. the model's whole language hidden (every OS): what a language never seen
///    on this model gets (`model+language-delta`, `model`);
/// 3. the whole model hidden, asked with the model's most reported screen:
///    what a model released this morning gets (`screen+language`).
///
/// Each answer is scored under the basis that gave it, next to the constant
/// default on the same cases. Pure: reads an index, does no I/O.
public enum ChainBacktest {
    /// Which cases to ask (`--model`, `--language`, `--os`): the same filter as `kbtd stats`.
    public typealias Filter = StatsFilter

    /// Absolute errors of one basis, and of the constant default on the same cases.
    public struct Row: Sendable, Equatable {
        public var basis: EstimateBasis
        public var cases: Int
        public var meanAbsoluteError: Double
        public var p90AbsoluteError: Double
        /// Share of cases within 0.5 pt (0...1).
        public var withinHalfPoint: Double
        public var defaultMeanAbsoluteError: Double
        public var defaultP90AbsoluteError: Double
        public var defaultWithinHalfPoint: Double
    }

    /// One question and what came back (for tests and for `Row`).
    public struct Case: Sendable, Equatable {
        public var key: SeriesKey
        public var hidden: Hidden
        public var truth: Double
        public var answer: Double
        public var basis: EstimateBasis
        public var defaultAnswer: Double
    }

    /// What a case hides from the chain.
    public enum Hidden: String, Sendable, Equatable, CaseIterable {
        case key, modelLanguage = "model+language", model
    }

    /// Every case, in key order.
    public static func cases(_ index: HeightIndex, estimator: HeightEstimator, filter: Filter = Filter()) -> [Case] {
        var seriesByModel: [String: [SeriesKey]] = [:]
        for key in index.bySeries.keys { seriesByModel[key.model, default: []].append(key) }
        var result: [Case] = []
        for (key, stats) in index.bySeries.sorted(by: { $0.key < $1.key }) where filter.matches(key) && estimator.supports(stats) {
            guard let mode = stats.votes.mode else { continue }
            let truth = HeightBin.points(mode)
            let constant = key.orientation == .portrait
                ? estimator.settings.defaultPortraitHeight : estimator.settings.defaultLandscapeHeight
            let modelLanguage = ModelLanguageKey(model: key.model, language: key.language,
                                                 orientation: key.orientation, keyboardType: key.keyboardType)
            let views: [(Hidden, HiddenLevels.Hide, ScreenSize?)] = [
                (.key, .series(key), nil),
                (.modelLanguage, .modelLanguage(modelLanguage), nil),
                (.model, .model(key.model), index.primaryScreen(of: key.model)),
            ]
            for (hidden, hide, screen) in views {
                let view = HiddenLevels(base: index, seriesByModel: seriesByModel, hide: hide)
                let query = HeightQuery(model: key.model, language: key.language, osMajor: key.osMajor,
                                        orientation: key.orientation, keyboardType: key.keyboardType, screen: screen)
                let estimate = estimator.estimate(query, in: view)
                result.append(Case(key: key, hidden: hidden, truth: truth, answer: estimate.height,
                                   basis: estimate.basis, defaultAnswer: constant))
            }
        }
        return result
    }

    /// The per-basis summary of `cases`, in chain order; bases with no case are left out.
    public static func rows(_ cases: [Case]) -> [Row] {
        EstimateBasis.allCases.compactMap { basis in
            let chosen = cases.filter { $0.basis == basis }
            guard !chosen.isEmpty else { return nil }
            let errors = chosen.map { abs($0.answer - $0.truth) }
            let defaultErrors = chosen.map { abs($0.defaultAnswer - $0.truth) }
            return Row(basis: basis, cases: chosen.count,
                       meanAbsoluteError: mean(errors), p90AbsoluteError: p90(errors), withinHalfPoint: within(errors),
                       defaultMeanAbsoluteError: mean(defaultErrors), defaultP90AbsoluteError: p90(defaultErrors),
                       defaultWithinHalfPoint: within(defaultErrors))
        }
    }

    static func mean(_ values: [Double]) -> Double { values.reduce(0, +) / Double(values.count) }

    /// Nearest rank, as the height percentiles.
    static func p90(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        let rank = max(1, Int((0.9 * Double(sorted.count)).rounded(.up)))
        return sorted[rank - 1]
    }

    static func within(_ values: [Double]) -> Double {
        Double(values.filter { $0 <= 0.5 }.count) / Double(values.count)
    }
}

/// The index as the chain would see it without some keys: what `ChainBacktest`
/// asks. Levels that include a hidden key are merged again from the keys left.
struct HiddenLevels: HeightLevels {
    enum Hide {
        case series(SeriesKey)
        case modelLanguage(ModelLanguageKey)
        case model(String)
    }

    let base: HeightIndex
    let seriesByModel: [String: [SeriesKey]]
    let hide: Hide

    func isHidden(_ key: SeriesKey) -> Bool {
        switch hide {
        case .series(let hidden): key == hidden
        case .modelLanguage(let hidden):
            key.model == hidden.model && key.language == hidden.language
                && key.orientation == hidden.orientation && key.keyboardType == hidden.keyboardType
        case .model(let hidden): key.model == hidden
        }
    }

    /// The series of `model` that pass `include` and are not hidden, merged.
    private func remerged(_ model: String, _ include: (SeriesKey) -> Bool) -> LevelStats? {
        LevelStats.merged((seriesByModel[model] ?? []).filter { include($0) && !isHidden($0) }.sorted()
            .compactMap { base.bySeries[$0] })
    }

    private func touches(model: String) -> Bool {
        switch hide {
        case .series(let key): key.model == model
        case .modelLanguage(let key): key.model == model
        case .model(let hidden): hidden == model
        }
    }

    func series(_ key: SeriesKey) -> LevelStats? {
        isHidden(key) ? nil : base.series(key)
    }

    func screens(of key: SeriesKey) -> [(screen: ScreenSize, stats: ReleaseStats)] {
        isHidden(key) ? [] : base.screens(of: key)
    }

    func modelLanguage(_ key: ModelLanguageKey) -> LevelStats? {
        guard touches(model: key.model) else { return base.modelLanguage(key) }
        return remerged(key.model) {
            $0.language == key.language && $0.orientation == key.orientation && $0.keyboardType == key.keyboardType
        }
    }

    func model(_ key: ModelKey) -> LevelStats? {
        guard touches(model: key.model) else { return base.model(key) }
        return remerged(key.model) { $0.orientation == key.orientation && $0.keyboardType == key.keyboardType }
    }

    func languages(ofModel model: String) -> Set<ModelLanguageKey> {
        let all = base.languages(ofModel: model)
        switch hide {
        case .model(let hidden) where hidden == model: return []
        case .modelLanguage(let hidden) where hidden.model == model: return all.subtracting([hidden])
        default: return all
        }
    }

    func models(withLanguage key: LanguageKey) -> Set<String> {
        let all = base.models(withLanguage: key)
        switch hide {
        case .model(let hidden): return all.subtracting([hidden])
        case .modelLanguage(let hidden) where hidden.language == key.language && hidden.orientation == key.orientation
            && hidden.keyboardType == key.keyboardType:
            return all.subtracting([hidden.model])
        default: return all
        }
    }

    func models(withScreen screen: ScreenSize) -> Set<String> {
        let all = base.models(withScreen: screen)
        if case .model(let hidden) = hide { return all.subtracting([hidden]) }
        return all
    }

    var osMajors: Set<Int> { base.osMajors }

    func primaryScreen(of model: String) -> ScreenSize? {
        if case .model(let hidden) = hide, hidden == model { return nil }
        return base.primaryScreen(of: model)
    }
}
