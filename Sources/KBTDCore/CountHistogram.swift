/// Counts per integer bin (half points for heights, log buckets for latency,
/// milliseconds for durations), with the mode and nearest-rank percentiles.
///
/// The index holds three of these per level of every key, and a real key
/// almost always has one bin (a model, OS, language and keyboard type have one
/// height), so one bin is held inline and only a second bin spills into a
/// heap array of (bin, count) sorted by bin: an index of a million keys then
/// makes no heap allocation for most of its histograms.
public struct CountHistogram: Sendable {
    struct Entry: Sendable, Equatable {
        var bin: Int
        var count: Int64
    }

    /// Every bin, sorted, when the histogram is not "empty" or "one inline bin".
    private var spilled: [Entry]?
    public private(set) var total: Int64 = 0
    /// The one bin held inline (its count is `total`), or `noBin`. Used only while `spilled` is nil.
    private var inlineBin = Self.noBin
    private static let noBin = Int32.min
    /// The bin that was the mode before the last `merge(_:limit:)` brought another bin level
    /// with it (else `noBin`): `mode` keeps it on that tie, so whoever votes a served height
    /// into a tie does not win it. Held in the padding after `inlineBin` (no extra memory).
    private var incumbent = Self.noBin

    /// Distinct bins held.
    public var binCount: Int { spilled?.count ?? (inlineBin == Self.noBin ? 0 : 1) }

    public init() {}

    public init(_ counts: [Int: Int64]) {
        for (bin, count) in counts { add(bin, count) }
    }

    /// A histogram holding exactly these sorted entries and total (for tests and references),
    /// and the bin that keeps its tie (see `merge(_:limit:keepingTies:)`).
    init(entries: [Entry], total: Int64, incumbent: Int? = nil) {
        store(entries, total: total)
        if let incumbent, let small = Int32(exactly: incumbent) { self.incumbent = small }
    }

    /// The bins and counts, ascending by bin.
    var entries: [Entry] {
        if let spilled { return spilled }
        return inlineBin == Self.noBin ? [] : [Entry(bin: Int(inlineBin), count: total)]
    }

    /// Calls `body` with each (bin, count), ascending by bin, without allocating.
    func forEachEntry(_ body: (Int, Int64) -> Void) {
        if let spilled {
            for entry in spilled { body(entry.bin, entry.count) }
        } else if inlineBin != Self.noBin {
            body(Int(inlineBin), total)
        }
    }

    /// Takes the entries out (leaving the histogram empty) so they can be changed without a copy.
    private mutating func takeEntries() -> [Entry] {
        let taken = entries
        spilled = nil
        inlineBin = Self.noBin
        return taken
    }

    /// Sets the content, in its one canonical form (so `==` compares content).
    private mutating func store(_ list: [Entry], total newTotal: Int64) {
        total = newTotal
        if list.isEmpty && newTotal == 0 {
            spilled = nil
            inlineBin = Self.noBin
        } else if list.count == 1, list[0].count == newTotal, let bin = Int32(exactly: list[0].bin), bin != Self.noBin {
            spilled = nil
            inlineBin = bin
        } else {
            spilled = list
            inlineBin = Self.noBin
        }
    }

    public mutating func add(_ bin: Int, _ count: Int64 = 1) {
        guard count != 0 else { return }
        if spilled == nil {
            if inlineBin == Self.noBin, total == 0, let small = Int32(exactly: bin), small != Self.noBin {
                inlineBin = small
                total = count
                return
            }
            if inlineBin != Self.noBin, Int(inlineBin) == bin {
                total += count  // the inline bin's count is the total
                return
            }
        }
        var list = takeEntries()
        var newTotal = total
        var low = 0, high = list.count
        while low < high {
            let middle = (low + high) / 2
            if list[middle].bin < bin { low = middle + 1 } else { high = middle }
        }
        if low < list.count && list[low].bin == bin {
            list[low].count += count
        } else {
            list.insert(Entry(bin: bin, count: count), at: low)
        }
        newTotal += count
        store(list, total: newTotal)
    }

    public mutating func merge(_ other: CountHistogram) {
        other.forEachEntry { add($0, $1) }
    }

    /// Adds `other` keeping at most `limit` bins: a new bin past the limit
    /// replaces the least frequent one when it is more frequent, else only
    /// `total` counts it. Real keys have one to three bins; the limit keeps a
    /// client that sprays every height from growing the index without bound,
    /// while the mode (what is served) survives.
    ///
    /// `keepingTies`: the index's own merge of a commit (`HeightIndex.apply`): the mode before it
    /// keeps a tie the merge makes. Any other merge (levels summed for a question, a rebuilt
    /// level) has no history to keep: its ties go to the larger bin.
    public mutating func merge(_ other: CountHistogram, limit: Int, keepingTies: Bool = false) {
        let before = mode
        defer {
            if keepingTies { settle(before) } else { incumbent = Self.noBin }
        }
        other.forEachEntry { bin, count in
            if binCount < limit || contains(bin) {
                add(bin, count)
                return
            }
            var list = takeEntries()
            let oldTotal = total
            if let weakest = list.indices.min(by: { list[$0].count < list[$1].count }), list[weakest].count < count {
                list.remove(at: weakest)  // its count stays in `total`
                store(list, total: oldTotal)
                add(bin, count)
            } else {
                store(list, total: oldTotal + count)
            }
        }
    }

    private func contains(_ bin: Int) -> Bool {
        if let spilled { return spilled.contains { $0.bin == bin } }
        return inlineBin != Self.noBin && Int(inlineBin) == bin
    }

    /// Remembers `before` (the mode before a merge) when the merge left it tied at the top.
    private mutating func settle(_ before: Int?) {
        incumbent = Self.noBin
        guard let before, let spilled, let small = Int32(exactly: before), small != Self.noBin,
              let held = spilled.first(where: { $0.bin == before })?.count,
              !spilled.contains(where: { $0.count > held }) else { return }
        incumbent = small
    }

    /// The most frequent bin. On a tie the bin that was the mode before the merge that made
    /// the tie keeps it (a served height is not lost to whoever votes another into a tie);
    /// otherwise the larger bin wins, because a keyboard estimate that is too tall leaves a gap
    /// while one too short hides the input bar. A histogram built in one merge (the index at
    /// start-up) has no earlier mode: its ties go to the larger bin.
    public var mode: Int? {
        guard let spilled else { return inlineBin != Self.noBin && total > 0 ? Int(inlineBin) : nil }
        var best: Entry?
        var incumbentCount: Int64?
        for entry in spilled where entry.count > 0 {
            if incumbent != Self.noBin, entry.bin == Int(incumbent) { incumbentCount = entry.count }
            if let current = best, entry.count < current.count { continue }
            best = entry  // bins ascend: an equal count later is a larger bin
        }
        if let incumbentCount, let best, incumbentCount == best.count { return Int(incumbent) }
        return best?.bin
    }

    /// Nearest-rank percentile (`q` in 0...1): the smallest bin whose
    /// cumulative count reaches ceil(q × total).
    public func percentile(_ q: Double) -> Int? {
        guard total > 0 else { return nil }
        guard let spilled else { return inlineBin == Self.noBin ? nil : Int(inlineBin) }
        let rank = max(1, Int64((q * Double(total)).rounded(.up)))
        var cumulative: Int64 = 0
        for entry in spilled {
            cumulative += entry.count
            if cumulative >= rank { return entry.bin }
        }
        return spilled.last?.bin
    }
}

extension CountHistogram {
    /// The bin that keeps a tie at the top (references and tests).
    var incumbentBin: Int? { incumbent == Self.noBin ? nil : Int(incumbent) }
}

extension CountHistogram: Equatable {
    /// Equal content (bins and counts); which bin won the last tie is history, not content.
    public static func == (a: CountHistogram, b: CountHistogram) -> Bool {
        a.total == b.total && a.inlineBin == b.inlineBin && a.spilled == b.spilled
    }
}
