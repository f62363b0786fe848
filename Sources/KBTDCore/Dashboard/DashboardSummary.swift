/// What the dashboard draws, reduced from the store's counts in one pass per
/// table (linear in the number of count rows; no per-key rendering), so the
/// page stays fast at 100k keys: histograms are drawn for one model only, and
/// lists are cut to their first entries.
struct DashboardSummary {
    /// One histogram panel: a (language, orientation) of the chosen model, keyboard type `default`.
    struct HeightPanel {
        var language: String
        var orientation: Orientation
        /// Docked height bins (half points) and their counts, ascending.
        var bins: [(halfPoints: Int, count: Int64)]
        var total: Int64
        var estimate: HeightEstimate
    }

    /// Cold-start percentiles of one key, as `kbtd stats` computes them.
    struct ColdStartRow {
        var key: SeriesKey
        var cold: CountHistogram
        var warm: CountHistogram
    }

    struct ThinKey {
        var key: SeriesKey
        var docked: Int64
    }

    static let maxPanels = 24
    static let maxColdStartRows = 12
    static let maxThinKeys = 20

    var models: [String] = []
    var osMajors: [Int] = []
    var languages: [String] = []
    /// The model the histograms are drawn for: the filter's, else the one with the most docked samples.
    var chosenModel: String?
    var panels: [HeightPanel] = []
    var hiddenPanels = 0
    var keys = 0
    var samples: Int64 = 0
    var cold = CountHistogram()
    var warm = CountHistogram()
    /// The same cold-start counts by log bucket, for drawing.
    var coldBuckets: [Int: Int64] = [:]
    var warmBuckets: [Int: Int64] = [:]
    var coldStartRows: [ColdStartRow] = []
    var durations: [Int: Int64] = [:]
    var curves: [Int: Int64] = [:]
    var animationTotal: Int64 = 0
    var thinKeys: [ThinKey] = []

    init(_ input: DashboardInput) {
        let filter = input.filter
        let counts = input.counts
        var modelSet = Set<String>(), osSet = Set<Int>(), languageSet = Set<String>()
        var keySet = Set<SeriesKey>()
        // The filter's choices list what exists, so a value can always be un-picked.
        for key in counts.animations.keys {
            modelSet.insert(key.series.model)
            osSet.insert(key.series.osMajor)
            languageSet.insert(key.series.language)
            guard filter.matches(key.series) else { continue }
            keySet.insert(key.series)
        }
        models = modelSet.sorted()
        osMajors = osSet.sorted()
        languages = languageSet.sorted()
        keys = keySet.count

        // Animation: every sample counts once (like `kbtd stats`' samples).
        for (key, count) in counts.animations where filter.matches(key.series) {
            samples += count
            animationTotal += count
            durations[key.bin.durationMs, default: 0] += count
            curves[key.bin.curve, default: 0] += count
        }

        // Docked heights: per key (thin keys), per model (the busiest), and the chosen model's panels.
        var dockedByKey: [SeriesKey: Int64] = [:]
        var dockedByModel: [String: Int64] = [:]
        for (key, count) in counts.heights where key.placement == .docked && filter.matches(key.series) {
            dockedByKey[key.series, default: 0] += count
            dockedByModel[key.series.model, default: 0] += count
        }
        chosenModel = filter.model ?? dockedByModel.max { ($0.value, $1.key) < ($1.value, $0.key) }?.key
        if let model = chosenModel {
            struct PanelKey: Hashable { var language: String; var orientation: Orientation }
            var bins: [PanelKey: [Int: Int64]] = [:]
            for (key, count) in counts.heights
            where key.placement == .docked && key.series.model == model && key.series.keyboardType == "default"
                && filter.matches(key.series) {
                bins[PanelKey(language: key.series.language, orientation: key.series.orientation), default: [:]][key.halfPoints,
                                                                                                                    default: 0] += count
            }
            let ordered = bins.map { (key: $0.key, bins: $0.value, total: $0.value.values.reduce(0, +)) }
                .sorted { ($1.total, $0.key.language, $0.key.orientation.rawValue) < ($0.total, $1.key.language, $1.key.orientation.rawValue) }
            hiddenPanels = max(0, ordered.count - Self.maxPanels)
            panels = ordered.prefix(Self.maxPanels).map { entry in
                let query = HeightQuery(model: model, language: entry.key.language, osMajor: filter.osMajor,
                                        orientation: entry.key.orientation, keyboardType: "default")
                return HeightPanel(language: entry.key.language, orientation: entry.key.orientation,
                                   bins: entry.bins.sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
                                   total: entry.total, estimate: input.estimate(query))
            }
        }

        // Cold start: the whole filter; per key only totals, then histograms for the keys shown.
        var coldTotals: [SeriesKey: (cold: Int64, warm: Int64)] = [:]
        for (key, count) in counts.coldStarts where filter.matches(key.series) {
            if key.preloaded {
                warm.add(key.bucket, count)
                warmBuckets[key.bucket, default: 0] += count
                coldTotals[key.series, default: (0, 0)].warm += count
            } else {
                cold.add(key.bucket, count)
                coldBuckets[key.bucket, default: 0] += count
                coldTotals[key.series, default: (0, 0)].cold += count
            }
        }
        let shown = coldTotals.lazy
            .filter { $0.value.cold > 0 && $0.value.warm > 0 }
            .smallest(Self.maxColdStartRows) { ($1.value.cold + $1.value.warm, $0.key) < ($0.value.cold + $0.value.warm, $1.key) }
            .map(\.key)
        var rows = Dictionary(uniqueKeysWithValues: shown.map { ($0, ColdStartRow(key: $0, cold: CountHistogram(), warm: CountHistogram())) })
        for (key, count) in counts.coldStarts where rows[key.series] != nil {
            if key.preloaded { rows[key.series]!.warm.add(key.bucket, count) } else { rows[key.series]!.cold.add(key.bucket, count) }
        }
        coldStartRows = shown.map { rows[$0]! }

        // Thinnest keys: docked samples closest to min_samples (below it first on a tie).
        let minSamples = input.minSamples
        thinKeys = dockedByKey
            .smallest(Self.maxThinKeys) { a, b in
                let da = abs(a.value - minSamples), db = abs(b.value - minSamples)
                return (da, a.value, a.key) < (db, b.value, b.key)
            }
            .map { ThinKey(key: $0.key, docked: $0.value) }
    }
}

extension Sequence {
    /// The first `k` elements in `areInIncreasingOrder`'s order, sorted: one pass
    /// with a small sorted buffer instead of sorting every key (100k keys, 20 shown).
    func smallest(_ k: Int, by areInIncreasingOrder: (Element, Element) -> Bool) -> [Element] {
        var best: [Element] = []
        best.reserveCapacity(k + 1)
        for element in self {
            if best.count == k {
                guard let last = best.last, areInIncreasingOrder(element, last) else { continue }
                best.removeLast()
            }
            var low = 0, high = best.count
            while low < high {
                let mid = (low + high) / 2
                if areInIncreasingOrder(element, best[mid]) { high = mid } else { low = mid + 1 }
            }
            best.insert(element, at: low)
        }
        return best
    }
}
