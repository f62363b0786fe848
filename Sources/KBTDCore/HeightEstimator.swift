/// Which level of the fallback chain an estimate came from (docs/fallback-chain.md).
public enum EstimateBasis: String, Sendable, CaseIterable {
    case modelOSLanguage = "model+os+language"
    case modelLanguage = "model+language"
    case modelLanguageDelta = "model+language-delta"
    case model = "model"
    case screenLanguage = "screen+language"
    case `default` = "default"
}

/// A question to the estimator: `GET /v1/height`'s parameters.
public struct HeightQuery: Hashable, Sendable {
    public var model: String
    public var language: String
    public var osMajor: Int?
    /// The release's minor (`1` for `os=26.1`): answers differ by release only where one moved keyboards.
    public var osMinor: Int?
    public var orientation: Orientation
    public var keyboardType: String
    /// The device's screen in points (`screen=`), for the `screen+language` level.
    public var screen: ScreenSize?

    public init(model: String, language: String, osMajor: Int? = nil, osMinor: Int? = nil,
                orientation: Orientation = .portrait, keyboardType: String = "default", screen: ScreenSize? = nil) {
        self.model = model
        self.language = language
        self.osMajor = osMajor
        self.osMinor = osMajor == nil ? nil : osMinor
        self.orientation = orientation
        self.keyboardType = keyboardType
        self.screen = screen
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
    /// Days of the latest data whose votes may outvote a key's all-time votes (`vote_horizon_days`; 0: votes never age).
    public var voteHorizonDays = 14

    public init() {}
}

/// Which refinements of the chain are on. `current` is what kbtd serves;
/// `beforeOSAware` is the chain of kbtd 0.1 (levels 3 and 4 over any OS, no
/// screen level), kept so `kbtd evaluate --chain` can compare the two on the same data.
public struct FallbackChain: Sendable, Equatable {
    /// Levels 3 and 4 try the asked OS major first.
    public var osAware: Bool
    /// The `screen+language` level between `model` and `default`.
    public var screenLevel: Bool
    /// Level 1 answers per OS release where a point release moved keyboards (`HeightEstimator+Releases`).
    public var releaseAware: Bool
    /// Levels 1 to 3 answer a question's `screen=` from that screen's data where it has a height
    /// of its own (Display Zoom; `HeightEstimator+Screens`).
    public var screenVariants: Bool

    public init(osAware: Bool, screenLevel: Bool, releaseAware: Bool = true, screenVariants: Bool = true) {
        self.osAware = osAware
        self.screenLevel = screenLevel
        self.releaseAware = releaseAware
        self.screenVariants = screenVariants
    }

    public static let current = FallbackChain(osAware: true, screenLevel: true)
    public static let beforeOSAware = FallbackChain(osAware: false, screenLevel: false, releaseAware: false, screenVariants: false)
    /// The chain before point releases answered on their own (kbtd 0.x): levels per OS major only.
    public static let beforeReleases = FallbackChain(osAware: true, screenLevel: true, releaseAware: false, screenVariants: false)
    /// The chain before screen variants: every screen of a model answered its majority's height.
    public static let beforeScreenVariants = FallbackChain(osAware: true, screenLevel: true, screenVariants: false)
}

/// Walks the six-level fallback chain (docs/fallback-chain.md) over a `HeightIndex`,
/// or any other `HeightLevels`.
public struct HeightEstimator: Sendable {
    public var settings: EstimatorSettings
    public var chain: FallbackChain

    public init(settings: EstimatorSettings = EstimatorSettings(), chain: FallbackChain = .current) {
        self.settings = settings
        self.chain = chain
    }

    public func estimate(_ query: HeightQuery, in index: some HeightLevels) -> HeightEstimate {
        let modelLanguage = ModelLanguageKey(model: query.model, language: query.language,
                                             orientation: query.orientation, keyboardType: query.keyboardType)
        let modelKey = ModelKey(model: query.model, orientation: query.orientation, keyboardType: query.keyboardType)
        let modelStats = index.model(modelKey)

        if let estimate = levelOne(query, fallback: modelStats, in: index) { return estimate }
        if let stats = index.modelLanguage(modelLanguage),
           let estimate = screenAware(stats, of: modelLanguage, query: query, fallback: modelStats, in: index) {
            return estimate
        }
        if chain.osAware, let osMajor = query.osMajor,
           let estimate = languageDelta(query, osMajor: osMajor, in: index, fallback: modelStats) {
            return estimate
        }
        if let estimate = languageDelta(query, osMajor: nil, in: index, fallback: modelStats) {
            return estimate
        }
        if chain.osAware, let osMajor = query.osMajor,
           let stats = modelOnOS(query, osMajor: osMajor, in: index),
           let estimate = answer(stats, basis: .model, fallback: modelStats) {
            return estimate
        }
        if let stats = modelStats, let estimate = answer(stats, basis: .model, fallback: nil) {
            return estimate
        }
        if chain.screenLevel, let estimate = screenLanguage(query, in: index, fallback: modelStats) {
            return estimate
        }
        return defaultEstimate(query.orientation, modelStats: modelStats)
    }

    /// The answer from the model's own data for this language (levels 1 and 2), or nil.
    public func ownEstimate(_ query: HeightQuery, in index: some HeightLevels) -> HeightEstimate? {
        let modelStats = index.model(ModelKey(model: query.model, orientation: query.orientation, keyboardType: query.keyboardType))
        if let estimate = levelOne(query, fallback: modelStats, in: index) { return estimate }
        let modelLanguage = ModelLanguageKey(model: query.model, language: query.language,
                                             orientation: query.orientation, keyboardType: query.keyboardType)
        if let stats = index.modelLanguage(modelLanguage) {
            return screenAware(stats, of: modelLanguage, query: query, fallback: modelStats, in: index)
        }
        return nil
    }

    /// Level 1: the key on the asked OS major (per release where one moved it, on the asked
    /// screen where that has a height of its own), or nil.
    private func levelOne(_ query: HeightQuery, fallback: LevelStats?, in index: some HeightLevels) -> HeightEstimate? {
        guard let osMajor = query.osMajor else { return nil }
        let series = SeriesKey(model: query.model, osMajor: osMajor, language: query.language,
                               orientation: query.orientation, keyboardType: query.keyboardType)
        guard let stats = releaseSeries(series, minor: query.osMinor, in: index) else { return nil }
        return screenAware(stats, of: series, query: query, basis: .modelOSLanguage, fallback: fallback, in: index)
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

    func answer(_ stats: LevelStats, basis: EstimateBasis, fallback: LevelStats?, shift: Int = 0) -> HeightEstimate? {
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

    /// Other models an OS-aware language difference needs before it is used: a median of five
    /// outvotes two models whose key is dominated by one odd device (chosen with `kbtd evaluate`
    /// on a kbtd-fleet database with `--os-shift 26=4`: 3 left a tail of such answers, 8 gave up
    /// some of the OS gain).
    static let minimumDeltaModels = 5

    /// Models that must have measured a keyboard on the asked OS major and on another one before
    /// `osMoved` may say the release moved it (chosen with `kbtd evaluate` on two kbtd-fleet databases,
    /// with and without `--os-shift 26=4`: 1 let noise through on the unshifted fleet, 3 and 5 scored alike).
    static let minimumShiftModels = 3

    /// Whether a level may answer: enough docked samples, from enough sources.
    /// Heights are the mode of the votes, so no single source outweighs the rest.
    public func supports(_ stats: LevelStats) -> Bool {
        stats.heights.total >= settings.minSamples && stats.hasSources(settings.minSources) && stats.votes.total > 0
    }

    /// Level 3: the model's own height for its best-supported language, plus the
    /// median difference between the asked language and that language on
    /// other models that measured both (a candidate bar adds the same everywhere).
    /// With `osMajor`, the base comes from that OS major only, so an OS release
    /// that moved every keyboard does not leak into the answer; so does the
    /// difference when `minimumDeltaModels` other models measured it there.
    private func languageDelta(_ query: HeightQuery, osMajor: Int?, in index: some HeightLevels,
                               fallback: LevelStats?) -> HeightEstimate? {
        let keys = index.languages(ofModel: query.model)
        guard !keys.isEmpty else { return nil }
        let askedLanguage = LanguageKey(language: query.language, orientation: query.orientation, keyboardType: query.keyboardType)
        let others = index.models(withLanguage: askedLanguage)
        guard !others.isEmpty else { return nil }

        func stats(_ model: String, _ language: String, onOS osMajor: Int? = osMajor) -> LevelStats? {
            let stats: LevelStats?
            if let osMajor {
                stats = index.series(SeriesKey(model: model, osMajor: osMajor, language: language,
                                               orientation: query.orientation, keyboardType: query.keyboardType))
            } else {
                stats = index.modelLanguage(ModelLanguageKey(model: model, language: language,
                                                             orientation: query.orientation, keyboardType: query.keyboardType))
            }
            guard let stats, supports(stats) else { return nil }
            return stats
        }

        // The model's own languages with enough docked samples, best supported first.
        let candidates = keys
            .filter { $0.orientation == query.orientation && $0.keyboardType == query.keyboardType && $0.language != query.language }
            .compactMap { key -> (ModelLanguageKey, LevelStats)? in stats(query.model, key.language).map { (key, $0) } }
            .sorted { ($0.1.votes.total, $1.0.language) > ($1.1.votes.total, $0.0.language) }

        func measuredDifferences(_ reference: String, onOS osMajor: Int?) -> [Int] {
            others.filter { $0 != query.model }.compactMap { other in
                guard let askedMode = stats(other, query.language, onOS: osMajor)?.votes.mode,
                      let baseMode = stats(other, reference, onOS: osMajor)?.votes.mode else { return nil }
                return askedMode - baseMode
            }
        }

        for (reference, referenceStats) in candidates {
            // Only where the data shows that this OS major moved the reference language's
            // keyboards: otherwise one OS major's thinner data is only noisier than all of it.
            if let osMajor, !osMoved(osMajor, languages: [reference.language], orientation: query.orientation,
                                     keyboardType: query.keyboardType, in: index) {
                return nil
            }
            var differences = measuredDifferences(reference.language, onOS: osMajor)
            // A language difference rarely changes between OS releases, and one measured on
            // a handful of models is mostly their noise: on a thin OS major, take it over any OS
            // (the base, which carries the OS shift, stays on the asked OS major).
            if osMajor != nil && differences.count < Self.minimumDeltaModels {
                differences = measuredDifferences(reference.language, onOS: nil)
            }
            guard !differences.isEmpty else { continue }
            let base = screenBase(referenceStats, model: query.model, reference: reference.language, osMajor: osMajor,
                                  query: query, in: index)
            return answer(base.stats, basis: .modelLanguageDelta, fallback: fallback,
                          shift: Self.lowerMedian(differences) + base.shift)
        }
        return nil
    }

    /// Level 4 on one OS major: the model's heights for any language on that OS, when the
    /// data shows that this OS major moved the keyboards of the languages the model measured
    /// there (nil otherwise: the any-OS level answers).
    private func modelOnOS(_ query: HeightQuery, osMajor: Int, in index: some HeightLevels) -> LevelStats? {
        let series = index.languages(ofModel: query.model)
            .filter { $0.orientation == query.orientation && $0.keyboardType == query.keyboardType }
            .sorted()
            .compactMap { key -> (language: String, stats: LevelStats)? in
                index.series(SeriesKey(model: query.model, osMajor: osMajor, language: key.language,
                                       orientation: query.orientation, keyboardType: query.keyboardType))
                    .map { (language: key.language, stats: $0) }
            }
        guard !series.isEmpty, osMoved(osMajor, languages: series.map { $0.language }, orientation: query.orientation,
                                       keyboardType: query.keyboardType, in: index) else { return nil }
        return LevelStats.merged(series.map { $0.stats })
    }

    /// Whether the data shows that keyboards on `osMajor` differ from the same models' keyboards
    /// on their other OS majors, for one (language, orientation, type): the median, over models that
    /// measured the language on `osMajor` and on another OS major, of the difference between the
    /// mode there and the mode on their best-supported other OS major is not zero, and at least
    /// `minimumShiftModels` models measured it (else the same question for the default keyboard).
    /// A release that moved keyboards shows on most models at once; one model's odd devices on a
    /// thin OS major do not move the median.
    public func osMoved(_ osMajor: Int, languages: [String], orientation: Orientation, keyboardType: String,
                 in index: some HeightLevels) -> Bool {
        let otherMajors = index.osMajors.subtracting([osMajor]).sorted()
        guard !otherMajors.isEmpty else { return false }
        var differences: [Int] = []
        for language in languages {
            func mode(_ model: String, _ os: Int) -> (votes: Int64, mode: Int)? {
                guard let stats = index.series(SeriesKey(model: model, osMajor: os, language: language,
                                                         orientation: orientation, keyboardType: keyboardType)),
                      supports(stats), let mode = stats.votes.mode else { return nil }
                return (stats.votes.total, mode)
            }
            for model in index.models(withLanguage: LanguageKey(language: language, orientation: orientation,
                                                                keyboardType: keyboardType)) {
                guard let here = mode(model, osMajor),
                      let there = otherMajors.compactMap({ mode(model, $0) }).max(by: { $0.votes < $1.votes }) else { continue }
                differences.append(here.mode - there.mode)
            }
        }
        guard differences.count >= Self.minimumShiftModels else {
            // Too few models measured this keyboard type on both OS majors: a release that
            // moves keyboards moves the default one too, and that one is measured everywhere.
            return keyboardType != "default"
                && osMoved(osMajor, languages: languages, orientation: orientation, keyboardType: "default", in: index)
        }
        return Self.lowerMedian(differences) != 0
    }

    /// The lower median of a non-empty list.
    static func lowerMedian(_ values: [Int]) -> Int {
        values.sorted()[(values.count - 1) / 2]
    }

    /// Level 5: every model that reported the query's screen (or, without
    /// `screen=`, the model's own most reported screen), for the asked language:
    /// that OS major first, then any OS.
    public func screenLanguage(_ query: HeightQuery, in index: some HeightLevels, fallback: LevelStats?) -> HeightEstimate? {
        guard let screen = query.screen ?? index.primaryScreen(of: query.model) else { return nil }
        let models = index.models(withScreen: screen).sorted()
        guard !models.isEmpty else { return nil }
        // A model listed under the screen through its Display Zoom phones lends that screen's own
        // data where it has a height of its own there, not its standard phones' (`screenFit`).
        func onScreen(_ whole: LevelStats?, _ keys: @autoclosure () -> [SeriesKey]) -> LevelStats? {
            guard let whole else { return nil }
            if chain.screenVariants, case .own(let variant) = screenFit(keys(), screen: screen, whole: whole, in: index) {
                return variant
            }
            return whole
        }
        if let osMajor = query.osMajor,
           let stats = LevelStats.merged(models.compactMap { model -> LevelStats? in
               let key = SeriesKey(model: model, osMajor: osMajor, language: query.language,
                                   orientation: query.orientation, keyboardType: query.keyboardType)
               return onScreen(index.series(key), [key])
           }),
           let estimate = answer(stats, basis: .screenLanguage, fallback: fallback) {
            return estimate
        }
        guard let stats = LevelStats.merged(models.compactMap { model -> LevelStats? in
            let key = ModelLanguageKey(model: model, language: query.language, orientation: query.orientation,
                                       keyboardType: query.keyboardType)
            return onScreen(index.modelLanguage(key), everyMajor(key, in: index))
        }) else { return nil }
        return answer(stats, basis: .screenLanguage, fallback: fallback)
    }
}
