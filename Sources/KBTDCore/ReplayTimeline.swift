/// The phones of one key on one OS release: whom `Replay` follows (`os=MAJOR.MINOR`).
public typealias ReplayCell = ReleaseKey

/// One moment of a replay: the counts that arrived then, and what the phones that sent them
/// measured (per cell, the height in half points: the truth they should have been served).
public struct ReplayStep: Sendable {
    /// Unix seconds: a batch's receipt, or the start of a UTC day when only the day is known.
    public var time: Int64
    /// Counts added at `time` (docked heights, votes, per-release and per-day counts).
    public var delta: AggregateDelta
    /// Per cell: docked samples in `delta` and the truth (nil: too few samples to say).
    public var touches: [ReplayCell: Touch]

    public struct Touch: Sendable, Equatable {
        public var samples: Int64
        public var truth: Int?
    }

    public init(time: Int64, delta: AggregateDelta, touches: [ReplayCell: Touch]) {
        self.time = time
        self.delta = delta
        self.touches = touches
    }

    /// A step of one or more phones' batches: each cell's truth is the mode of its own votes in
    /// `delta` (`AggregateDelta.releases`; a batch must have gone through `recordRelease(os:)`).
    public init(time: Int64, delta: AggregateDelta) {
        var samples: [ReplayCell: Int64] = [:]
        var votes: [ReplayCell: [Int: Int64]] = [:]
        for (bin, count) in delta.releases {
            let cell = ReplayCell(series: bin.series, minor: bin.minor)
            samples[cell, default: 0] += count.samples
            votes[cell, default: [:]][bin.halfPoints, default: 0] += max(count.votes, 0)
        }
        var touches: [ReplayCell: Touch] = [:]
        for (cell, count) in samples where count > 0 {
            touches[cell] = Touch(samples: count, truth: CountHistogram(votes[cell]!.filter { $0.value > 0 }).mode)
        }
        self.init(time: time, delta: delta, touches: touches)
    }
}

/// A database's counts in the finest time order it keeps (docs/evaluate-export.md, "Replay").
/// kbtd stores counts, not samples: per key and OS release (`release_counts`, no time), per key
/// and UTC day of receipt (`day_votes`, votes only), and per batch its receipt second, model,
/// OS release and sample count (`batches`, kept `batch_retention_days`). The replay takes each
/// (key, release)'s counts, spreads them over the days the key's votes of that height arrived
/// (proportional fitting to both the releases' counts and the days' votes, starting from the
/// samples each (model, release) sent that day: a release gets nothing on a day none of its
/// batches arrived; exact where a key has one release or one day), then over that day's batches
/// of the same model and release in proportion to their samples. Counts with no time (from before releases or days were stored, or whose day
/// or batches are gone) form the `history`, applied before the first step and not scored.
public struct ReplayTimeline: Sendable {
    /// What has no time: applied first, not scored.
    public var history: AggregateDelta
    public var steps: [ReplayStep]
    /// Whether the steps are batches' receipts (seconds) or, for some, only UTC days.
    public var resolution: Resolution

    public enum Resolution: String, Sendable {
        /// Every step is one or more batches received in the same second.
        case batches
        /// Some steps are whole days (no batch receipts for that day).
        case days
    }

    public init(history: AggregateDelta = AggregateDelta(), steps: [ReplayStep], resolution: Resolution = .batches) {
        self.history = history
        self.steps = steps
        self.resolution = resolution
    }

    /// A stored batch's receipt (`batches`: what `kbtd migrate` carries over).
    public struct Receipt: Sendable, Equatable {
        public var receivedAt: Int64
        public var model: String
        public var os: String
        public var accepted: Int

        public init(receivedAt: Int64, model: String, os: String, accepted: Int) {
            self.receivedAt = receivedAt
            self.model = model
            self.os = os
            self.accepted = accepted
        }
    }

    /// The timeline of a store's `counts` (`loadIndexCounts`) and batch `receipts` (possibly none).
    /// A (cell, day)'s truth is the mode of its votes when it has `minSamples` docked samples.
    ///
    /// Three stages: each bin's releases are fitted to its days (`fitReleasesToDays`), each
    /// (cell, day) is spread over that day's receipts (`spreadOverReceipts`), and the pieces
    /// become steps, taken out of the history (`buildSteps`).
    public init(counts: AggregateDelta, receipts: [Receipt], minSamples: Int64) {
        let receiptIndex = ReceiptIndex(receipts)
        let pieces = Self.fitReleasesToDays(counts, receipts: receiptIndex)
        let (byTime, dayOnly) = Self.spreadOverReceipts(pieces, receipts: receiptIndex)
        // Each (cell, day)'s truth: the mode of its votes, where it has a level's support.
        var truths: [PieceKey: Int] = [:]
        for (piece, bins) in pieces {
            let samples = bins.values.reduce(0) { $0 + $1.samples }
            guard samples >= minSamples else { continue }
            truths[piece] = CountHistogram(bins.compactMapValues { $0.votes > 0 ? $0.votes : nil }).mode
        }
        let (history, steps) = Self.buildSteps(byTime, truths: truths, history: counts)
        self.init(history: history, steps: steps, resolution: dayOnly ? .days : .batches)
    }

    /// The receipts per (model, major, minor, day), in time order, their samples, and the
    /// (model, major, day)s any receipt arrived on.
    private struct ReceiptIndex {
        var batches: [ReceiptGroup: [Receipt]] = [:]
        var receiptDays: Set<ModelDay> = []
        var acceptedSums: [ReceiptGroup: Double] = [:]

        init(_ receipts: [Receipt]) {
            for receipt in receipts where receipt.accepted > 0 {
                guard let major = FieldRules.osMajor(receipt.os), let minor = FieldRules.osMinor(receipt.os) else { continue }
                let day = Int(receipt.receivedAt.dividedRoundingDown(by: 86_400))
                batches[ReceiptGroup(model: receipt.model, major: major, minor: minor, day: day), default: []].append(receipt)
                receiptDays.insert(ModelDay(model: receipt.model, major: major, day: day))
            }
            for key in Array(batches.keys) {
                batches[key]!.sort { $0.receivedAt < $1.receivedAt }
                acceptedSums[key] = Double(batches[key]!.reduce(0) { $0 + $1.accepted })
            }
        }

        func accepted(_ group: ReceiptGroup) -> Double { acceptedSums[group] ?? 0 }
    }

    /// Stage 1: per (key, release, day), each bin's samples and votes. A bin's releases are spread
    /// over its days by proportional fitting: from the receipts' samples per (model, release, day)
    /// (1 where a day's receipts are gone), scaled in turn to the releases' votes and the days' votes.
    /// A bin with no day stays in the history.
    private static func fitReleasesToDays(_ counts: AggregateDelta, receipts: ReceiptIndex) -> [PieceKey: [Int: ReleaseCount]] {
        // Each key's votes per day, per bin; and its releases' counts per bin.
        var days: [SeriesBin: [(day: Int, votes: Int64)]] = [:]
        for (bin, votes) in counts.dayVotes where votes > 0 {
            days[SeriesBin(series: bin.series, halfPoints: bin.halfPoints), default: []].append((bin.day, votes))
        }
        var releases: [SeriesBin: [(minor: Int, count: ReleaseCount)]] = [:]
        for (bin, count) in counts.releases {
            releases[SeriesBin(series: bin.series, halfPoints: bin.halfPoints), default: []].append((bin.minor, count))
        }
        var pieces: [PieceKey: [Int: ReleaseCount]] = [:]
        for (seriesBin, cells) in releases.sorted(by: { ($0.key.series, $0.key.halfPoints) < ($1.key.series, $1.key.halfPoints) }) {
            guard let shares = days[seriesBin]?.sorted(by: { $0.day < $1.day }) else { continue }  // no day: the history
            let series = seriesBin.series
            let cells = cells.sorted { $0.minor < $1.minor }
            var weights: [[Double]] = cells.map { cell in
                shares.map { share in
                    guard receipts.receiptDays.contains(ModelDay(model: series.model, major: series.osMajor, day: share.day)) else {
                        return 1
                    }
                    return receipts.accepted(ReceiptGroup(model: series.model, major: series.osMajor, minor: cell.minor, day: share.day))
                }
            }
            let rowTotals = cells.map { Double(max($0.count.votes, $0.count.samples)) }
            let columnTotals = shares.map { Double($0.votes) }
            for _ in 0..<Self.fittingRounds {
                for r in weights.indices {
                    let sum = weights[r].reduce(0, +)
                    if sum > 0 { weights[r] = weights[r].map { $0 * rowTotals[r] / sum } }
                }
                for d in shares.indices {
                    let sum = weights.reduce(0) { $0 + $1[d] }
                    if sum > 0 { for r in weights.indices { weights[r][d] *= columnTotals[d] / sum } }
                }
            }
            for (r, cell) in cells.enumerated() where weights[r].reduce(0, +) > 0 {
                let samples = Self.apportion(cell.count.samples, by: weights[r])
                let votes = Self.apportion(cell.count.votes, by: weights[r])
                for (i, share) in shares.enumerated() where samples[i] > 0 || votes[i] > 0 {
                    let key = PieceKey(cell: ReplayCell(series: series, minor: cell.minor), day: share.day)
                    pieces[key, default: [:]][seriesBin.halfPoints, default: .zero] += ReleaseCount(samples: samples[i], votes: votes[i])
                }
            }
        }
        return pieces
    }

    /// Stage 2: each (cell, day)'s bins over that day's receipts of the same model and release, in
    /// proportion to their samples (by receipt time); where the day's receipts are gone, one step
    /// at the day's midnight (`dayOnly`).
    private static func spreadOverReceipts(_ pieces: [PieceKey: [Int: ReleaseCount]], receipts: ReceiptIndex)
        -> (byTime: [Int64: [PieceKey: [Int: ReleaseCount]]], dayOnly: Bool) {
        var byTime: [Int64: [PieceKey: [Int: ReleaseCount]]] = [:]
        var dayOnly = false
        for (piece, bins) in pieces {
            let group = ReceiptGroup(model: piece.cell.series.model, major: piece.cell.series.osMajor, minor: piece.cell.minor,
                                     day: piece.day)
            guard let batches = receipts.batches[group] else {
                dayOnly = true
                byTime[Int64(piece.day) * 86_400, default: [:]][piece, default: [:]].merge(bins, uniquingKeysWith: +)
                continue
            }
            let weights = batches.map { Double($0.accepted) }
            var spread: [[Int: ReleaseCount]] = Array(repeating: [:], count: batches.count)
            for (half, count) in bins {
                let samples = Self.apportion(count.samples, by: weights)
                let votes = Self.apportion(count.votes, by: weights)
                for i in batches.indices where samples[i] > 0 || votes[i] > 0 {
                    spread[i][half] = ReleaseCount(samples: samples[i], votes: votes[i])
                }
            }
            for (i, receipt) in batches.enumerated() where !spread[i].isEmpty {
                byTime[receipt.receivedAt, default: [:]][piece, default: [:]].merge(spread[i], uniquingKeysWith: +)
            }
        }
        return (byTime, dayOnly)
    }

    /// Stage 3: one step per time, its delta (docked heights, votes, per-release and per-day counts)
    /// and touches, each piece's counts taken out of `history` (what is left has no time).
    private static func buildSteps(_ byTime: [Int64: [PieceKey: [Int: ReleaseCount]]], truths: [PieceKey: Int],
                                   history counts: AggregateDelta) -> (history: AggregateDelta, steps: [ReplayStep]) {
        var history = counts
        var steps: [ReplayStep] = []
        for time in byTime.keys.sorted() {
            var delta = AggregateDelta()
            var touches: [ReplayCell: ReplayStep.Touch] = [:]
            for (piece, bins) in byTime[time]!.sorted(by: { $0.key < $1.key }) {
                let series = piece.cell.series
                var samples: Int64 = 0
                for (half, count) in bins {
                    samples += count.samples
                    delta.releases[ReleaseBin(series: series, minor: piece.cell.minor, halfPoints: half), default: .zero] += count
                    let docked = HeightCountKey(series: series, placement: .docked, halfPoints: half)
                    delta.heights[docked, default: 0] += count.samples
                    history.heights[docked, default: 0] -= count.samples
                    if count.votes > 0 {
                        delta.votes[SeriesBin(series: series, halfPoints: half), default: 0] += count.votes
                        delta.dayVotes[DayVoteBin(series: series, day: piece.day, halfPoints: half), default: 0] += count.votes
                        history.votes[SeriesBin(series: series, halfPoints: half), default: 0] -= count.votes
                        history.dayVotes[DayVoteBin(series: series, day: piece.day, halfPoints: half), default: 0] -= count.votes
                    }
                    history.releases[ReleaseBin(series: series, minor: piece.cell.minor, halfPoints: half)] = nil
                }
                if samples > 0 {
                    touches[piece.cell, default: ReplayStep.Touch(samples: 0, truth: truths[piece])].samples += samples
                }
            }
            steps.append(ReplayStep(time: time, delta: delta, touches: touches))
        }
        history.heights = history.heights.filter { $0.value > 0 }
        history.votes = history.votes.filter { $0.value > 0 }
        history.dayVotes = history.dayVotes.filter { $0.value > 0 }
        return (history, steps)
    }

    /// `total` split over `weights` in proportion, as whole numbers that add up to `total`
    /// (cumulative rounding: the first k parts hold round(total × share of the first k weights)).
    static func apportion(_ total: Int64, by weights: [Double]) -> [Int64] {
        let sum = weights.reduce(0, +)
        guard sum > 0, total > 0 else { return weights.map { _ in 0 } }
        var parts: [Int64] = []
        var running = 0.0
        var given: Int64 = 0
        for weight in weights {
            running += weight
            let upTo = Int64((Double(total) * running / sum).rounded())
            parts.append(upTo - given)
            given = upTo
        }
        return parts
    }

    private struct PieceKey: Hashable, Comparable {
        var cell: ReplayCell
        var day: Int

        static func < (a: Self, b: Self) -> Bool { (a.cell, a.day) < (b.cell, b.day) }
    }

    /// Rounds of proportional fitting (a handful of releases and days: it settles in a few).
    static let fittingRounds = 20

    private struct ModelDay: Hashable {
        var model: String
        var major: Int
        var day: Int
    }

    private struct ReceiptGroup: Hashable {
        var model: String
        var major: Int
        var minor: Int
        var day: Int
    }
}
