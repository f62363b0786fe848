/// `kbtd evaluate --releases`: what phones on each OS release are served, against that
/// release's own data. Every (key, release) with `min_samples` docked samples on the release
/// is asked with its release (`os=MAJOR.MINOR`, nothing hidden); the truth is the mode of the
/// release's own votes. Where a release moved a keyboard, the chain per OS major serves its
/// phones the other releases' height until the new samples outvote every old one.
public enum ReleaseBacktest {
    public struct Case: Sendable, Equatable {
        public var key: SeriesKey
        public var minor: Int
        public var truth: Double
        public var answer: Double
        public var basis: EstimateBasis
        /// Docked samples on this release: how much data the release had when asked.
        public var samples: Int64
    }

    /// One line of the summary: the cases on releases whose truth differs from the key's
    /// mode over its whole OS major (`moved`) or not.
    public struct Row: Sendable, Equatable {
        public var moved: Bool
        public var cases: Int
        public var meanError: Double
        public var maxError: Double
        /// Share of answers within 0.5 pt of the truth.
        public var within: Double
        /// Docked samples on the release, over its cases (median).
        public var medianSamples: Int64
    }

    public static func cases(_ index: HeightIndex, estimator: HeightEstimator) -> [Case] {
        var result: [Case] = []
        for key in index.bySeries.keys.sorted() {
            for (minor, stats) in index.releases(of: key) where stats.samples >= estimator.settings.minSamples {
                guard let mode = stats.votes.mode else { continue }
                let query = HeightQuery(model: key.model, language: key.language, osMajor: key.osMajor, osMinor: minor,
                                        orientation: key.orientation, keyboardType: key.keyboardType)
                let estimate = estimator.estimate(query, in: index)
                result.append(Case(key: key, minor: minor, truth: HeightBin.points(mode), answer: estimate.height,
                                   basis: estimate.basis, samples: stats.samples))
            }
        }
        return result
    }

    /// Splits `cases` by whether the release's truth differs from its key's mode over the OS major.
    public static func rows(_ cases: [Case], in index: HeightIndex) -> [Row] {
        var groups: [Bool: [Case]] = [:]
        for item in cases {
            let whole = index.series(item.key)?.votes.mode.map(HeightBin.points)
            groups[whole != item.truth, default: []].append(item)
        }
        return [false, true].compactMap { moved in
            guard let group = groups[moved], !group.isEmpty else { return nil }
            let errors = group.map { abs($0.answer - $0.truth) }
            let samples = group.map(\.samples).sorted()
            return Row(moved: moved, cases: group.count, meanError: errors.reduce(0, +) / Double(errors.count),
                       maxError: errors.max() ?? 0, within: Double(errors.filter { $0 <= 0.5 }.count) / Double(errors.count),
                       medianSamples: samples[(samples.count - 1) / 2])
        }
    }
}
