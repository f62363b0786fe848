/// Counts per integer bin (half points for heights, log buckets for latency,
/// milliseconds for durations), with the mode and nearest-rank percentiles.
///
/// Kept as one small array of (bin, count) sorted by bin, not a dictionary: a
/// key almost always has one to three bins, and the index holds millions of
/// histograms, so a dictionary's allocation per histogram dominated memory.
public struct CountHistogram: Sendable, Equatable {
    struct Entry: Sendable, Equatable {
        var bin: Int
        var count: Int64
    }

    private var entries: [Entry] = []
    public private(set) var total: Int64 = 0
    /// Distinct bins held.
    public var binCount: Int { entries.count }

    public init() {}

    public init(_ counts: [Int: Int64]) {
        for (bin, count) in counts { add(bin, count) }
    }

    public mutating func add(_ bin: Int, _ count: Int64 = 1) {
        guard count != 0 else { return }
        var low = 0, high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].bin < bin { low = middle + 1 } else { high = middle }
        }
        if low < entries.count && entries[low].bin == bin {
            entries[low].count += count
        } else {
            entries.insert(Entry(bin: bin, count: count), at: low)
        }
        total += count
    }

    public mutating func merge(_ other: CountHistogram) {
        for entry in other.entries { add(entry.bin, entry.count) }
    }

    /// Adds `other` keeping at most `limit` bins: a new bin past the limit
    /// replaces the least frequent one when it is more frequent, else only
    /// `total` counts it. Real keys have one to three bins; the limit keeps a
    /// client that sprays every height from growing the index without bound,
    /// while the mode (what is served) survives.
    public mutating func merge(_ other: CountHistogram, limit: Int) {
        for entry in other.entries {
            if entries.count < limit || entries.contains(where: { $0.bin == entry.bin }) {
                add(entry.bin, entry.count)
            } else if let weakest = entries.indices.min(by: { entries[$0].count < entries[$1].count }),
                      entries[weakest].count < entry.count {
                entries.remove(at: weakest)  // its count stays in `total`
                add(entry.bin, entry.count)
            } else {
                total += entry.count
            }
        }
    }

    /// The most frequent bin; on a tie the larger bin wins, because a keyboard
    /// estimate that is too tall leaves a gap while one too short hides the input bar.
    public var mode: Int? {
        var best: Entry?
        for entry in entries where entry.count > 0 {
            if let current = best, entry.count < current.count { continue }
            best = entry  // bins ascend: an equal count later is a larger bin
        }
        return best?.bin
    }

    /// Nearest-rank percentile (`q` in 0...1): the smallest bin whose
    /// cumulative count reaches ceil(q × total).
    public func percentile(_ q: Double) -> Int? {
        guard total > 0 else { return nil }
        let rank = max(1, Int64((q * Double(total)).rounded(.up)))
        var cumulative: Int64 = 0
        for entry in entries {
            cumulative += entry.count
            if cumulative >= rank { return entry.bin }
        }
        return entries.last?.bin
    }
}
