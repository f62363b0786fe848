/// Counts per integer bin (half points for heights, log buckets for latency,
/// milliseconds for durations), with the mode and nearest-rank percentiles.
public struct CountHistogram: Sendable, Equatable {
    public private(set) var counts: [Int: Int64] = [:]
    public private(set) var total: Int64 = 0

    public init() {}

    public init(_ counts: [Int: Int64]) {
        for (bin, count) in counts { add(bin, count) }
    }

    public mutating func add(_ bin: Int, _ count: Int64 = 1) {
        guard count != 0 else { return }
        counts[bin, default: 0] += count
        total += count
    }

    public mutating func merge(_ other: CountHistogram) {
        for (bin, count) in other.counts { add(bin, count) }
    }

    /// The most frequent bin; on a tie the larger bin wins, because a keyboard
    /// estimate that is too tall leaves a gap while one too short hides the input bar.
    public var mode: Int? {
        var best: (bin: Int, count: Int64)?
        for (bin, count) in counts where count > 0 {
            if let current = best, count < current.count || (count == current.count && bin < current.bin) { continue }
            best = (bin, count)
        }
        return best?.bin
    }

    /// Nearest-rank percentile (`q` in 0...1): the smallest bin whose
    /// cumulative count reaches ceil(q × total).
    public func percentile(_ q: Double) -> Int? {
        guard total > 0 else { return nil }
        let rank = max(1, Int64((q * Double(total)).rounded(.up)))
        var cumulative: Int64 = 0
        for bin in counts.keys.sorted() {
            cumulative += counts[bin]!
            if cumulative >= rank { return bin }
        }
        return counts.keys.max()
    }
}
