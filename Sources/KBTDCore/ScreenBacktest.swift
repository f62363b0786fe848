/// `kbtd evaluate --screens`: what phones on each reported screen are served, against that
/// screen's own data (Display Zoom: a zoomed phone renders another screen and has another
/// keyboard height). Every (key, screen) whose data on that screen has a level's support
/// (`min_samples` docked samples, `min_sources` networks of its own or a trusted peer) is asked
/// with `screen=` that screen, twice: with the key hidden (as `ChainBacktest`'s first case, so
/// level 1 cannot answer from the very data scored: what a zoomed phone on a new OS major gets)
/// and with the key visible (what a zoomed phone gets in production, level 1). The truth is the
/// mode of the screen's own votes. Cases are split by whether that mode differs from the key's
/// mode over all its screens (a zoomed minority) or not (the majority's screen). Pure: no I/O.
public enum ScreenBacktest {
    /// How a case was asked.
    public enum Asked: String, Sendable, CaseIterable {
        case keyHidden = "key hidden"
        case keyVisible = "key visible"
    }

    public struct Case: Sendable, Equatable {
        public var key: SeriesKey
        public var screen: ScreenSize
        public var asked: Asked
        public var truth: Double
        /// The key's mode over all its screens: what a chain blind to screens serves at best.
        public var keyMode: Double
        public var answer: Double
        public var basis: EstimateBasis
        /// Docked samples on this screen.
        public var samples: Int64

        /// Whether the screen's own height differs from the key's (a zoomed minority).
        public var differs: Bool { truth != keyMode }
    }

    /// One line of the summary.
    public struct Row: Sendable, Equatable {
        public var asked: Asked
        public var differs: Bool
        public var cases: Int
        public var meanError: Double
        public var maxError: Double
        /// Share of answers within 0.5 pt of the truth.
        public var within: Double
        /// Docked samples on the screen, over its cases (median).
        public var medianSamples: Int64
    }

    /// Every case, in key and screen order, for the keys `filter` matches.
    public static func cases(_ index: HeightIndex, estimator: HeightEstimator,
                             filter: ChainBacktest.Filter = ChainBacktest.Filter()) -> [Case] {
        var seriesByModel: [String: [SeriesKey]] = [:]
        for key in index.bySeries.keys { seriesByModel[key.model, default: []].append(key) }
        var result: [Case] = []
        for (key, whole) in index.bySeries.sorted(by: { $0.key < $1.key }) where filter.matches(key) {
            guard let keyMode = whole.votes.mode else { continue }
            for (screen, stats) in index.screens(of: key) {
                let own = HeightEstimator.level(of: [stats], like: whole)
                guard estimator.supports(own), estimator.supportsRelease([stats]), let mode = own.votes.mode else { continue }
                let query = HeightQuery(model: key.model, language: key.language, osMajor: key.osMajor,
                                        orientation: key.orientation, keyboardType: key.keyboardType, screen: screen)
                let hidden = HiddenLevels(base: index, seriesByModel: seriesByModel, hide: .series(key))
                for asked in Asked.allCases {
                    let estimate = asked == .keyHidden ? estimator.estimate(query, in: hidden) : estimator.estimate(query, in: index)
                    result.append(Case(key: key, screen: screen, asked: asked, truth: HeightBin.points(mode),
                                       keyMode: HeightBin.points(keyMode), answer: estimate.height, basis: estimate.basis,
                                       samples: stats.samples))
                }
            }
        }
        return result
    }

    /// The summary: per way of asking, the cases whose screen differs from its key and those that do not.
    public static func rows(_ cases: [Case]) -> [Row] {
        var rows: [Row] = []
        for asked in Asked.allCases {
            for differs in [true, false] {
                let group = cases.filter { $0.asked == asked && $0.differs == differs }
                guard !group.isEmpty else { continue }
                let errors = group.map { abs($0.answer - $0.truth) }
                let samples = group.map(\.samples).sorted()
                rows.append(Row(asked: asked, differs: differs, cases: group.count, meanError: ChainBacktest.mean(errors),
                                maxError: errors.max() ?? 0, within: ChainBacktest.within(errors),
                                medianSamples: samples[(samples.count - 1) / 2]))
            }
        }
        return rows
    }
}
