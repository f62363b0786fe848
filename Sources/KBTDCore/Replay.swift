/// `kbtd evaluate --replay`: time-to-truth. A `ReplayTimeline` is fed, step by step, into a
/// `HeightIndex` through the real `HeightEstimator`; before each step, the phones that sent it
/// ask for their key on their release (`os=MAJOR.MINOR`), and are scored against what they
/// measured. Where a (key, release)'s truth differs from what its phones' keys measured before
/// (the same release earlier, else the nearest earlier release), a change opens; it is found
/// once, after a step of that cell, the estimator serves the new height (within 0.5 pt). The
/// report says per basis how many samples and how much time passed, and the error served
/// meanwhile. Pure: no I/O.
public enum Replay {
    /// One change of a cell's truth and how long kbtd took to serve it.
    public struct Change: Sendable, Equatable {
        public var cell: ReplayCell
        /// Half points: the height phones got before, and the new one.
        public var from: Int
        public var to: Int
        /// Unix seconds of the first step with the new truth, and of the step after which kbtd served it.
        public var start: Int64
        public var found: Int64?
        /// The basis kbtd served the new height from (nil: not found by the end, or the truth changed again).
        public var basis: EstimateBasis?
        /// The cell's docked samples from `start` to `found` (inclusive), or to the end when not found.
        public var samples: Int64 = 0
        /// Sum over those samples of |served − truth|, as phones asked before their samples counted (pt).
        public var errorSum: Double = 0
        /// Samples served a wrong height (more than 0.5 pt off) meanwhile.
        public var wrongSamples: Int64 = 0
        /// The same change (release, language, orientation, type, difference) happened on at least
        /// `minimumShiftModels` models: a release that moved a keyboard, as `releaseMoved` sees one,
        /// rather than one key's phones on a release measuring something else (a thin release of odd devices).
        public var releaseWide = false

        public var meanError: Double { samples > 0 ? errorSum / Double(samples) : 0 }
    }

    /// What the phones of every step were served, per basis: sample-weighted.
    public struct Served: Sendable, Equatable {
        public var basis: EstimateBasis
        public var samples: Int64 = 0
        public var errorSum: Double = 0
        public var within: Int64 = 0

        public var meanError: Double { samples > 0 ? errorSum / Double(samples) : 0 }
        public var withinShare: Double { samples > 0 ? Double(within) / Double(samples) : 0 }
    }

    public struct Result: Sendable, Equatable {
        public var changes: [Change]
        public var served: [Served]
        public var steps: Int
        /// Docked samples replayed (scored or not), and those scored (their cell had a truth).
        public var samples: Int64
        public var scoredSamples: Int64
    }

    public static func run(_ timeline: ReplayTimeline, estimator: HeightEstimator) -> Result {
        var index = HeightIndex()
        index.apply(timeline.history)
        /// Per key: each release's latest truth.
        var lastTruth: [SeriesKey: [Int: Int]] = [:]
        var open: [ReplayCell: Change] = [:]
        var changes: [Change] = []
        var served: [EstimateBasis: Served] = [:]
        var samples: Int64 = 0
        var scored: Int64 = 0

        func ask(_ cell: ReplayCell) -> HeightEstimate {
            let key = cell.series
            return estimator.estimate(HeightQuery(model: key.model, language: key.language, osMajor: key.osMajor,
                                                  osMinor: cell.minor, orientation: key.orientation,
                                                  keyboardType: key.keyboardType, screen: index.primaryScreen(of: key.model)),
                                      in: index)
        }
        /// What the cell's phones measured before: their release earlier, else the nearest earlier release's latest.
        func reference(_ cell: ReplayCell) -> Int? {
            guard let releases = lastTruth[cell.series] else { return nil }
            if let own = releases[cell.minor] { return own }
            return releases.filter { $0.key < cell.minor }.max { $0.key < $1.key }?.value
        }

        for step in timeline.steps {
            let touched = step.touches.sorted { $0.key < $1.key }
            for (cell, touch) in touched {
                samples += touch.samples
                // Too few samples to say: what the cell measured last, if anything.
                guard let truth = touch.truth ?? lastTruth[cell.series]?[cell.minor] else { continue }
                let before = ask(cell)
                let truthPoints = HeightBin.points(truth)
                let error = abs(before.height - truthPoints)
                scored += touch.samples
                served[before.basis, default: Served(basis: before.basis)].samples += touch.samples
                served[before.basis]!.errorSum += error * Double(touch.samples)
                if error <= 0.5 { served[before.basis]!.within += touch.samples }

                if var change = open[cell], change.to != truth {
                    // The truth moved again before kbtd followed: this change was never served.
                    changes.append(change)
                    open[cell] = nil
                    change = Change(cell: cell, from: change.to, to: truth, start: step.time)
                    open[cell] = change
                } else if open[cell] == nil, let old = reference(cell), old != truth {
                    open[cell] = Change(cell: cell, from: old, to: truth, start: step.time)
                }
                if open[cell] != nil {
                    open[cell]!.samples += touch.samples
                    open[cell]!.errorSum += error * Double(touch.samples)
                    if error > 0.5 { open[cell]!.wrongSamples += touch.samples }
                }
                lastTruth[cell.series, default: [:]][cell.minor] = truth
            }
            index.apply(step.delta)
            for (cell, _) in touched {
                guard var change = open[cell], let truth = lastTruth[cell.series]?[cell.minor], change.to == truth else { continue }
                let after = ask(cell)
                if abs(after.height - HeightBin.points(truth)) <= 0.5 {
                    change.found = step.time
                    change.basis = after.basis
                    changes.append(change)
                    open[cell] = nil
                }
            }
        }
        changes += open.values
        changes.sort { ($0.start, $0.cell) < ($1.start, $1.cell) }
        var models: [ShiftKey: Set<String>] = [:]
        for change in changes { models[ShiftKey(change), default: []].insert(change.cell.series.model) }
        for i in changes.indices {
            changes[i].releaseWide = models[ShiftKey(changes[i])]!.count >= HeightEstimator.minimumShiftModels
        }
        return Result(changes: changes, served: EstimateBasis.allCases.compactMap { served[$0] },
                      steps: timeline.steps.count, samples: samples, scoredSamples: scored)
    }

    /// A change as seen across models: its release, keyboard and difference.
    private struct ShiftKey: Hashable {
        var major: Int, minor: Int, language: String, orientation: Orientation, keyboardType: String, difference: Int

        init(_ change: Change) {
            let key = change.cell.series
            (major, minor, language, orientation, keyboardType, difference)
                = (key.osMajor, change.cell.minor, key.language, key.orientation, key.keyboardType, change.to - change.from)
        }
    }

    /// One line of the changes' summary: the release-wide changes or the others, that kbtd served
    /// from `basis` (nil: not found).
    public struct ChangeRow: Sendable, Equatable {
        public var releaseWide: Bool
        public var basis: EstimateBasis?
        public var changes: Int
        /// Samples (of the changed cell) to truth: median and max.
        public var medianSamples: Int64
        public var maxSamples: Int64
        /// Seconds to truth: median and max (0 for not found).
        public var medianSeconds: Int64
        public var maxSeconds: Int64
        /// Mean error served meanwhile (pt, sample-weighted over the rows' changes).
        public var meanError: Double
    }

    /// The release-wide changes, then the others; each per basis that served the new height, in
    /// chain order, then those not found.
    public static func changeRows(_ changes: [Change]) -> [ChangeRow] {
        let bases: [EstimateBasis?] = EstimateBasis.allCases.map(Optional.some) + [nil]
        let groups = [true, false].flatMap { wide in bases.map { (wide, $0) } }
        return groups.compactMap { wide, basis in
            let chosen = changes.filter { $0.basis == basis && $0.releaseWide == wide }
            guard !chosen.isEmpty else { return nil }
            let samples = chosen.map(\.samples).sorted()
            let seconds = chosen.map { ($0.found ?? $0.start) - $0.start }.sorted()
            let total = samples.reduce(0, +)
            let errors = chosen.reduce(0) { $0 + $1.errorSum }
            return ChangeRow(releaseWide: wide, basis: basis, changes: chosen.count, medianSamples: samples[(samples.count - 1) / 2],
                             maxSamples: samples.last!, medianSeconds: seconds[(seconds.count - 1) / 2],
                             maxSeconds: seconds.last!, meanError: total > 0 ? errors / Double(total) : 0)
        }
    }
}
