/// Counts per integer bin (half points for heights, log buckets for latency,
/// milliseconds for durations), with the mode and nearest-rank percentiles.
///
/// Kept as two small parallel arrays sorted by bin, not a dictionary: a key
/// almost always has one to three bins, and the index holds millions of
/// histograms, so a dictionary's allocation per histogram dominated memory.
public struct CountHistogram: Sendable, Equatable {
    public private(set) var bins: [Int] = []
    public private(set) var binCounts: [Int64] = []
    public private(set) var total: Int64 = 0

    public init() {}

    public init(_ counts: [Int: Int64]) {
        for (bin, count) in counts { add(bin, count) }
    }

    public mutating func add(_ bin: Int, _ count: Int64 = 1) {
        guard count != 0 else { return }
        var low = 0, high = bins.count
        while low < high {
            let middle = (low + high) / 2
            if bins[middle] < bin { low = middle + 1 } else { high = middle }
        }
        if low < bins.count && bins[low] == bin {
            binCounts[low] += count
        } else {
            bins.insert(bin, at: low)
            binCounts.insert(count, at: low)
        }
        total += count
    }

    public mutating func merge(_ other: CountHistogram) {
        for (bin, count) in zip(other.bins, other.binCounts) { add(bin, count) }
    }

    /// The most frequent bin; on a tie the larger bin wins, because a keyboard
    /// estimate that is too tall leaves a gap while one too short hides the input bar.
    public var mode: Int? {
        var best: (bin: Int, count: Int64)?
        for (bin, count) in zip(bins, binCounts) where count > 0 {
            if let current = best, count < current.count { continue }
            best = (bin, count)  // bins ascend: an equal count later is a larger bin
        }
        return best?.bin
    }

    /// Nearest-rank percentile (`q` in 0...1): the smallest bin whose
    /// cumulative count reaches ceil(q × total).
    public func percentile(_ q: Double) -> Int? {
        guard total > 0 else { return nil }
        let rank = max(1, Int64((q * Double(total)).rounded(.up)))
        var cumulative: Int64 = 0
        for (bin, count) in zip(bins, binCounts) {
            cumulative += count
            if cumulative >= rank { return bin }
        }
        return bins.last
    }
}
