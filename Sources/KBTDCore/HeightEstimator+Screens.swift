/// Screen variants (docs/fallback-chain.md, "Screen variants"): a question's `screen=` is
/// answered from that screen's own data where it has a level's support and a height of its own.
extension HeightEstimator {
    /// What a screen's own data says about a level (keys merged, as the level merges them).
    enum ScreenFit {
        /// The screen has a level's support and another height: the level's stats on that screen.
        case own(LevelStats)
        /// The screen has a level's support and the level's height: the level answers it as it is.
        case unchanged
        /// Too little data on that screen to tell.
        case unknown
    }

    /// The screen's entries of `keys` as a level like `whole` (the level those keys make up), told
    /// apart from it: a variant needs `min_samples` docked samples and `min_sources` networks of its
    /// own (a trusted peer counts as enough), so one network claiming a screen moves nothing.
    func screenFit(_ keys: [SeriesKey], screen: ScreenSize, whole: LevelStats, in index: some HeightLevels) -> ScreenFit {
        var entries: [ReleaseStats] = []
        for key in keys {
            if let entry = index.screens(of: key).first(where: { $0.screen == screen }) { entries.append(entry.stats) }
        }
        guard !entries.isEmpty else { return .unknown }
        let variant = Self.level(of: entries, like: whole)
        guard supports(variant), supportsRelease(entries), let mode = variant.votes.mode else { return .unknown }
        return mode == whole.votes.mode ? .unchanged : .own(variant)
    }

    /// A `model+language` key's exact keys on every OS major the index holds.
    func everyMajor(_ key: ModelLanguageKey, in index: some HeightLevels) -> [SeriesKey] {
        index.osMajors.sorted().map {
            SeriesKey(model: key.model, osMajor: $0, language: key.language, orientation: key.orientation, keyboardType: key.keyboardType)
        }
    }

    /// How far a screen's keyboard sits from the model's usual one for a language, over every OS
    /// major (in half points; 0 when the data cannot tell): what a key too thin on that screen
    /// is shifted by. Display Zoom's difference belongs to the phone and the keyboard, not to
    /// the OS release, so the model's other OS majors measure it for a new one.
    func screenShift(_ key: ModelLanguageKey, screen: ScreenSize, in index: some HeightLevels) -> Int {
        guard let whole = index.modelLanguage(key), let mode = whole.votes.mode,
              case .own(let variant) = screenFit(everyMajor(key, in: index), screen: screen, whole: whole, in: index),
              let variantMode = variant.votes.mode else { return 0 }
        return variantMode - mode
    }

    /// Level 1 for a question with `screen=`: the key's data on that screen when it has its own
    /// height there; else the key's answer (`stats`), shifted by the model+language's difference
    /// on that screen when the key is too thin on it to tell.
    func screenAware(_ stats: LevelStats, of series: SeriesKey, query: HeightQuery, basis: EstimateBasis,
                     fallback: LevelStats?, in index: some HeightLevels) -> HeightEstimate? {
        guard chain.screenVariants, let screen = query.screen, let whole = index.series(series) else {
            return answer(stats, basis: basis, fallback: fallback)
        }
        switch screenFit([series], screen: screen, whole: whole, in: index) {
        case .own(let variant):
            if let estimate = answer(variant, basis: basis, fallback: fallback) { return estimate }
            return answer(stats, basis: basis, fallback: fallback)
        case .unchanged:
            return answer(stats, basis: basis, fallback: fallback)
        case .unknown:
            let modelLanguage = ModelLanguageKey(model: series.model, language: series.language,
                                                 orientation: series.orientation, keyboardType: series.keyboardType)
            return answer(stats, basis: basis, fallback: fallback, shift: screenShift(modelLanguage, screen: screen, in: index))
        }
    }

    /// Level 2 for a question with `screen=`: the model+language's data on that screen, over
    /// every OS major, when it has its own height there; else `stats` as they are.
    func screenAware(_ stats: LevelStats, of key: ModelLanguageKey, query: HeightQuery, fallback: LevelStats?,
                     in index: some HeightLevels) -> HeightEstimate? {
        if chain.screenVariants, let screen = query.screen,
           case .own(let variant) = screenFit(everyMajor(key, in: index), screen: screen, whole: stats, in: index),
           let estimate = answer(variant, basis: .modelLanguage, fallback: fallback) {
            return estimate
        }
        return answer(stats, basis: .modelLanguage, fallback: fallback)
    }

    /// Level 3's base for a question with `screen=`: the reference language's data on that screen
    /// (on `osMajor`, or over every major), and the shift to add when it is too thin to tell.
    func screenBase(_ stats: LevelStats, model: String, reference: String, osMajor: Int?, query: HeightQuery,
                    in index: some HeightLevels) -> (stats: LevelStats, shift: Int) {
        guard chain.screenVariants, let screen = query.screen else { return (stats, 0) }
        let key = ModelLanguageKey(model: model, language: reference, orientation: query.orientation, keyboardType: query.keyboardType)
        let keys = osMajor.map {
            [SeriesKey(model: model, osMajor: $0, language: reference, orientation: query.orientation, keyboardType: query.keyboardType)]
        } ?? everyMajor(key, in: index)
        switch screenFit(keys, screen: screen, whole: stats, in: index) {
        case .own(let variant): return (variant, 0)
        case .unchanged: return (stats, 0)
        case .unknown: return (stats, osMajor == nil ? 0 : screenShift(key, screen: screen, in: index))
        }
    }
}
