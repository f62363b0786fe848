/// Which level of the fallback chain an estimate came from (docs/fallback-chain.md).
public enum EstimateBasis: String, Sendable, CaseIterable {
    case modelOSLanguage = "model+os+language"
    case modelLanguage = "model+language"
    case modelLanguageDelta = "model+language-delta"
    case model = "model"
    case `default` = "default"
}

/// A question to the estimator: `GET /v1/height`'s parameters.
public struct HeightQuery: Hashable, Sendable {
    public var model: String
    public var language: String
    public var osMajor: Int?
    public var orientation: Orientation
    public var keyboardType: String

    public init(model: String, language: String, osMajor: Int? = nil,
                orientation: Orientation = .portrait, keyboardType: String = "default") {
        self.model = model
        self.language = language
        self.osMajor = osMajor
        self.orientation = orientation
        self.keyboardType = keyboardType
    }
}

/// The answer: the docked system keyboard height to lay out for.
public struct HeightEstimate: Sendable, Equatable {
    public var height: Double
    public var safeAreaBottom: Double
    public var basis: EstimateBasis
    /// Docked samples behind the level that answered.
    public var samples: Int64
    public var p10: Double
    public var p90: Double
    public var animationDuration: Double
    public var animationCurve: Int
}

/// Tunables of the estimator (configurable; reloaded on SIGHUP).
public struct EstimatorSettings: Sendable, Equatable {
    /// Docked samples a level needs before it may answer.
    public var minSamples: Int64 = 20
    /// Distinct sources (client networks) a level needs, unless a trusted peer reported it.
    public var minSources = 3
    public var defaultPortraitHeight: Double = 335
    public var defaultLandscapeHeight: Double = 209
    public var defaultDuration: Double = 0.25
    public var defaultCurve: Int = 7

    public init() {}
}

/// Walks the five-level fallback chain over a `HeightIndex`.
public struct HeightEstimator: Sendable {
    public var settings: EstimatorSettings

    public init(settings: EstimatorSettings = EstimatorSettings()) {
        self.settings = settings
    }

    public func estimate(_ query: HeightQuery, in index: HeightIndex) -> HeightEstimate {
        let modelLanguage = ModelLanguageKey(model: query.model, language: query.language,
                                             orientation: query.orientation, keyboardType: query.keyboardType)
        let modelKey = ModelKey(model: query.model, orientation: query.orientation, keyboardType: query.keyboardType)
        let modelStats = index.byModel[modelKey]

        if let osMajor = query.osMajor {
            let series = SeriesKey(model: query.model, osMajor: osMajor, language: query.language,
                                   orientation: query.orientation, keyboardType: query.keyboardType)
            if let stats = index.bySeries[series], let estimate = answer(stats, basis: .modelOSLanguage, fallback: modelStats) {
                return estimate
            }
        }
        if let stats = index.byModelLanguage[modelLanguage], let estimate = answer(stats, basis: .modelLanguage, fallback: modelStats) {
            return estimate
        }
        if let estimate = languageDelta(query, in: index, fallback: modelStats) {
            return estimate
        }
        if let stats = modelStats, let estimate = answer(stats, basis: .model, fallback: nil) {
            return estimate
        }
        return defaultEstimate(query.orientation, modelStats: modelStats)
    }

    /// The configured constant, with the model's safe area and animation when known.
    public func defaultEstimate(_ orientation: Orientation, modelStats: LevelStats?) -> HeightEstimate {
        let height = orientation == .portrait ? settings.defaultPortraitHeight : settings.defaultLandscapeHeight
        let animation = modelStats?.animationMode
        return HeightEstimate(
            height: height,
            safeAreaBottom: modelStats?.safeAreas.mode.map(HeightBin.points) ?? 0,
            basis: .default, samples: 0, p10: height, p90: height,
            animationDuration: animation.map { Double($0.durationMs) / 1000 } ?? settings.defaultDuration,
            animationCurve: animation?.curve ?? settings.defaultCurve)
    }

    private func answer(_ stats: LevelStats, basis: EstimateBasis, fallback: LevelStats?, shift: Int = 0) -> HeightEstimate? {
        guard supports(stats), let mode = stats.votes.mode,
              let p10 = stats.votes.percentile(0.10), let p90 = stats.votes.percentile(0.90) else { return nil }
        let animation = stats.animationMode ?? fallback?.animationMode
        let safeArea = stats.safeAreas.mode ?? fallback?.safeAreas.mode ?? 0
        return HeightEstimate(
            height: HeightBin.points(mode + shift),
            safeAreaBottom: HeightBin.points(safeArea),
            basis: basis,
            samples: stats.heights.total,
            p10: HeightBin.points(p10 + shift),
            p90: HeightBin.points(p90 + shift),
            animationDuration: animation.map { Double($0.durationMs) / 1000 } ?? settings.defaultDuration,
            animationCurve: animation?.curve ?? settings.defaultCurve)
    }

    /// Whether a level may answer: enough docked samples, from enough sources.
    /// Heights are the mode of the votes, so no single source outweighs the rest.
    func supports(_ stats: LevelStats) -> Bool {
        stats.heights.total >= settings.minSamples && stats.hasSources(settings.minSources) && stats.votes.total > 0
    }

    /// Level 3: the model's own height for its best-supported language, plus the
    /// median difference between the asked language and that language on
    /// other models that measured both (a candidate bar adds the same everywhere).
    private func languageDelta(_ query: HeightQuery, in index: HeightIndex, fallback: LevelStats?) -> HeightEstimate? {
        guard let keys = index.keysByModel[query.model] else { return nil }
        let askedLanguage = LanguageKey(language: query.language, orientation: query.orientation, keyboardType: query.keyboardType)
        guard let others = index.modelsByLanguage[askedLanguage], !others.isEmpty else { return nil }

        // The model's own languages with enough docked samples, best supported first.
        let candidates = keys
            .filter { $0.orientation == query.orientation && $0.keyboardType == query.keyboardType && $0.language != query.language }
            .compactMap { key -> (ModelLanguageKey, LevelStats)? in
                guard let stats = index.byModelLanguage[key], supports(stats) else { return nil }
                return (key, stats)
            }
            .sorted { ($0.1.votes.total, $1.0.language) > ($1.1.votes.total, $0.0.language) }

        for (reference, referenceStats) in candidates {
            var differences: [Int] = []
            for other in others where other != query.model {
                let asked = ModelLanguageKey(model: other, language: query.language,
                                             orientation: query.orientation, keyboardType: query.keyboardType)
                let base = ModelLanguageKey(model: other, language: reference.language,
                                            orientation: query.orientation, keyboardType: query.keyboardType)
                guard let askedStats = index.byModelLanguage[asked], supports(askedStats),
                      let baseStats = index.byModelLanguage[base], supports(baseStats),
                      let askedMode = askedStats.votes.mode, let baseMode = baseStats.votes.mode else { continue }
                differences.append(askedMode - baseMode)
            }
            guard !differences.isEmpty else { continue }
            differences.sort()
            let median = differences[(differences.count - 1) / 2]
            return answer(referenceStats, basis: .modelLanguageDelta, fallback: fallback, shift: median)
        }
        return nil
    }
}
