/// Point releases (docs/fallback-chain.md, "Point releases"): the `model+os+language`
/// level is kept per OS major, and answers per release (major.minor) only where the
/// data shows that a release moved that keyboard.
extension HeightEstimator {
    /// What level 1 answers from for `key` asked on release `key.osMajor`.`minor`:
    /// the key's stats on its OS major, unless a release of that major moved this
    /// keyboard (`releaseMoved`). Then a phone on a release from a moving one on is
    /// answered from the releases from that one up to its own (before the next moving one),
    /// each with `min_sources` of its own (`supportsRelease`), when together they have
    /// `min_samples`, and a phone
    /// on an earlier release from the key's data without the moved releases, each when
    /// it has the support a level needs (else the whole major answers, as before).
    func releaseSeries(_ key: SeriesKey, minor: Int?, in index: some HeightLevels) -> LevelStats? {
        guard let all = index.series(key) else { return nil }
        let whole = aged(all, key, in: index)
        guard chain.releaseAware, let minor else { return whole }
        let releases = index.releases(of: key)
        guard !releases.isEmpty else { return whole }
        // Each decision once per index generation (`ReleaseMoveCache`): a lookup per release of
        // the key (at most `HeightIndex.maxReleasesPerKey`), not a walk over every model per request.
        let language = LanguageKey(language: key.language, orientation: key.orientation, keyboardType: key.keyboardType)
        // A release no key supports moved nothing (no model counts in its decision): skipped, so
        // one network's sprayed minors cost no decision.
        let moved = releases.map(\.minor).filter {
            index.releaseHasSupport(osMajor: key.osMajor, minor: $0) && releaseMoved(language, osMajor: key.osMajor, minor: $0, in: index)
        }
        guard let firstMoved = moved.first else { return whole }
        if let start = moved.last(where: { $0 <= minor }) {
            // Only releases up to the phone's own, each with support of its own, lend to the
            // pooled answer: one network's votes under a later or a thin release must not join
            // the histogram that answers every phone from the moving release on.
            let own = releases.filter { $0.minor >= start && $0.minor <= minor && supportsRelease([$0.stats]) }
                .map(\.stats)
            let stats = Self.level(of: own, like: all)
            return supports(stats) && supportsRelease(own) ? stats : whole
        }
        let stats = Self.level(all, without: releases.filter { $0.minor >= firstMoved }.map(\.stats))
        return supports(stats) ? stats : whole
    }

    /// One release decision through the index's cache (`HeightLevels.releaseMoved`).
    private func releaseMoved(_ language: LanguageKey, osMajor: Int, minor: Int, in index: some HeightLevels) -> Bool {
        index.releaseMoved(ReleaseMoveKey(language: language, osMajor: osMajor, minor: minor,
                                          minSamples: settings.minSamples, minSources: settings.minSources),
                           models: { Array(index.models(withLanguage: language)) },
                           difference: { model in
                               releaseDifference(SeriesKey(model: model, osMajor: osMajor, language: language.language,
                                                           orientation: language.orientation, keyboardType: language.keyboardType),
                                                 minor: minor, in: index)
                           },
                           decide: Self.moved)
    }

    /// Computes the index's release decisions ahead of the questions that need them: every
    /// keyboard on every release some key holds with support of its own, at most `budget` models' differences per
    /// call (decisions already made cost a lookup). True once every decision is made; the daemon
    /// calls it under its index lock until then, letting go of the lock between calls. Once a walk
    /// made them all, later calls refresh only the decisions a change made stale (a commit's
    /// keyboards and majors), and walk everything again only when the index counts a new keyboard
    /// or a newly supported release (`HeightIndex.releaseDecisionsAdded`) or the settings changed.
    public func settleReleaseDecisions(in index: HeightIndex, budget: Int) -> Bool {
        guard chain.releaseAware else { return true }
        let budget = max(1, budget)
        let cache = index.releaseMoves
        let start = cache.differencesComputed, unfinished = cache.unfinished
        let walk = ReleaseMoveCache.Walk(added: index.releaseDecisionsAdded, minSamples: settings.minSamples,
                                         minSources: settings.minSources)
        var index = index
        /// One decision within what is left of the budget; false once it is spent.
        func settle(_ language: LanguageKey, _ major: Int, _ minor: Int) -> Bool {
            let spent = cache.differencesComputed - start
            guard spent < budget else { return false }
            index.releaseWorkBudget = budget - spent
            _ = releaseMoved(language, osMajor: major, minor: minor, in: index)
            return true
        }
        if cache.hasWalked(walk) {
            for key in cache.staleDecisions where key.minSamples == walk.minSamples && key.minSources == walk.minSources {
                guard settle(key.language, key.osMajor, key.minor) else { return false }
            }
            return cache.unfinished == unfinished
        }
        for (major, minors) in index.supportedReleaseHolders {
            for minor in minors.keys.sorted() {
                for language in index.modelsByLanguage.keys {
                    guard settle(language, major, minor) else { return false }
                }
            }
        }
        guard cache.unfinished == unfinished else { return false }
        cache.markWalked(walk)
        return true
    }

    /// Whether releases have `min_sources` distinct sources of their own, or a trusted one
    /// (`ReleaseSupport`; over several releases, the most any one of them has).
    public func supportsRelease(_ releases: [ReleaseStats]) -> Bool {
        ReleaseSupport.union(releases.map(\.support)).satisfies(settings.minSources)
    }

    /// Whether release `osMajor`.`minor` moved one keyboard (language, orientation, type): over
    /// the models that measured it on that release with a level's support (`min_samples` docked
    /// samples there, `min_sources` of its own: `supportsRelease`) and before it (the key without that release and
    /// later ones), the median difference between the mode of their votes there and before is
    /// not zero, and at least `minimumShiftModels` models measured it. The rule `osMoved` applies
    /// to OS majors: a release that moves keyboards shows on most models at once, while a few odd
    /// devices on a thin release do not move the median, so a release that moved nothing leaves
    /// every answer as it was.
    public func releaseMoved(osMajor: Int, minor: Int, language: String, orientation: Orientation, keyboardType: String,
                             in index: some HeightLevels) -> Bool {
        var histogram: [Int: Int] = [:]
        for model in index.models(withLanguage: LanguageKey(language: language, orientation: orientation, keyboardType: keyboardType)) {
            let key = SeriesKey(model: model, osMajor: osMajor, language: language, orientation: orientation, keyboardType: keyboardType)
            if let difference = releaseDifference(key, minor: minor, in: index) { histogram[difference, default: 0] += 1 }
        }
        return Self.moved(histogram)
    }

    /// One model's say in `releaseMoved`: the mode of its votes on release `minor` less the mode
    /// before it, when both have a level's support (and the release its own sources); else nil.
    func releaseDifference(_ key: SeriesKey, minor: Int, in index: some HeightLevels) -> Int? {
        let releases = index.releases(of: key)
        guard let here = releases.first(where: { $0.minor == minor }), let whole = index.series(key) else { return nil }
        let there = Self.level(of: [here.stats], like: whole)
        let before = Self.level(whole, without: releases.filter { $0.minor >= minor }.map(\.stats))
        guard supports(there), supportsRelease([here.stats]), supports(before), let new = there.votes.mode,
              let old = before.votes.mode else { return nil }
        return new - old
    }

    /// The decision over the models' differences (difference: number of models): at least
    /// `minimumShiftModels` models, and their lower median not zero.
    static func moved(_ histogram: [Int: Int]) -> Bool {
        let count = histogram.values.reduce(0, +)
        guard count >= minimumShiftModels else { return false }
        var seen = 0
        for (difference, models) in histogram.sorted(by: { $0.key < $1.key }) {
            seen += models
            if seen > (count - 1) / 2 { return difference != 0 }
        }
        return false
    }

    /// Release stats as a level: their votes and docked samples, with the key's sources,
    /// safe areas and animations (which are kept per OS major).
    static func level(of releases: [ReleaseStats], like whole: LevelStats) -> LevelStats {
        var votes = CountHistogram()
        var samples: Int64 = 0
        for release in releases {
            votes.merge(release.votes)
            samples += release.samples
        }
        return LevelStats(heights: Self.total(samples, at: votes.mode), votes: votes, safeAreas: whole.safeAreas,
                          sources: whole.sources, showAnimations: whole.showAnimations)
    }

    /// The key's stats without some of its releases: votes and docked samples subtracted.
    static func level(_ whole: LevelStats, without releases: [ReleaseStats]) -> LevelStats {
        var counts: [Int: Int64] = [:]
        whole.votes.forEachEntry { bin, count in counts[bin] = count }
        var samples = whole.heights.total
        for release in releases {
            release.votes.forEachEntry { bin, count in counts[bin, default: 0] -= count }
            samples -= release.samples
        }
        let votes = CountHistogram(counts.filter { $0.value > 0 })
        return LevelStats(heights: Self.total(max(0, samples), at: votes.mode), votes: votes, safeAreas: whole.safeAreas,
                          sources: whole.sources, showAnimations: whole.showAnimations)
    }

    /// A histogram that only carries a total (the estimator reads a level's docked samples from `heights.total`).
    private static func total(_ samples: Int64, at bin: Int?) -> CountHistogram {
        guard samples > 0 else { return CountHistogram() }
        return CountHistogram([bin ?? 0: samples])
    }
}
