/// What the dashboard draws, already reduced: a bounded summary of the store
/// for one filter, whatever the number of keys (choice lists, panels, table
/// rows and chart bars are all cut to the `max*` limits below).
///
/// A store builds it with aggregating queries (`TelemetryReader.dashboardData`:
/// `GROUP BY`, `ORDER BY ... LIMIT` in the database, so neither the daemon nor
/// `kbtd report` holds every count); `init(counts:filter:minSamples:)` builds
/// the same value from counts in memory (the reference the stores are tested
/// against, and what tests and the page benchmark draw from).
public struct DashboardData: Sendable, Equatable {
    /// One docked height bin (half points) and its count.
    public struct Bin: Sendable, Equatable {
        public var halfPoints: Int
        public var count: Int64

        public init(halfPoints: Int, count: Int64) {
            self.halfPoints = halfPoints
            self.count = count
        }
    }

    /// One histogram panel's counts: a (language, orientation) of the chosen model, keyboard type `default`.
    public struct Panel: Sendable, Equatable {
        public var language: String
        public var orientation: Orientation
        /// Ascending by bin.
        public var bins: [Bin]
        public var total: Int64

        public init(language: String, orientation: Orientation, bins: [Bin], total: Int64) {
            self.language = language
            self.orientation = orientation
            self.bins = bins
            self.total = total
        }
    }

    /// One key's cold-start histograms, without and with pre-warming.
    public struct ColdStartRow: Sendable, Equatable {
        public var key: SeriesKey
        public var cold: CountHistogram
        public var warm: CountHistogram

        public init(key: SeriesKey, cold: CountHistogram, warm: CountHistogram) {
            self.key = key
            self.cold = cold
            self.warm = warm
        }
    }

    /// A key and its docked samples.
    public struct KeyCount: Sendable, Equatable {
        public var key: SeriesKey
        public var count: Int64

        public init(key: SeriesKey, count: Int64) {
            self.key = key
            self.count = count
        }
    }

    /// An animation duration (ms) or curve and its samples.
    public struct ValueCount: Sendable, Equatable {
        public var value: Int
        public var count: Int64

        public init(value: Int, count: Int64) {
            self.value = value
            self.count = count
        }
    }

    /// Values offered by each filter list: the ones with the most samples (then sorted by name).
    public static let maxChoices = 500
    public static let maxPanels = 24
    public static let maxColdStartRows = 12
    public static let maxThinKeys = 20
    /// Bars per animation chart (durations, curves).
    public static let maxAnimationRows = 8

    /// Filter choices over all data (not filtered, so a value can always be un-picked), sorted;
    /// at most `maxChoices` each, the ones with the most samples.
    public var models: [String] = []
    public var osMajors: [Int] = []
    public var languages: [String] = []
    /// Values left out of each list by `maxChoices`.
    public var hiddenModels = 0
    public var hiddenOSMajors = 0
    public var hiddenLanguages = 0
    /// Keys and samples (every sample counts once, as in `kbtd stats`) matching the filter.
    public var keys = 0
    public var samples: Int64 = 0
    /// The model the histograms are drawn for: the filter's, else the one with the most docked samples.
    public var chosenModel: String?
    /// The chosen model's panels with the most samples, most first (at most `maxPanels`).
    public var panels: [Panel] = []
    public var hiddenPanels = 0
    /// Cold-start samples of the whole filter by log bucket, without (`cold`) and with (`warm`) pre-warming.
    public var coldBuckets: [Int: Int64] = [:]
    public var warmBuckets: [Int: Int64] = [:]
    /// Keys with both kinds of cold start, most samples first (at most `maxColdStartRows`).
    public var coldStartRows: [ColdStartRow] = []
    /// Animation durations and curves with the most samples, most first (at most `maxAnimationRows` each).
    public var durations: [ValueCount] = []
    public var curves: [ValueCount] = []
    /// Keys whose docked samples are closest to `minSamples` (below it first on a tie; at most `maxThinKeys`).
    public var thinKeys: [KeyCount] = []

    public init() {}

    /// The same summary reduced from counts in memory, one pass per table (linear in the count rows).
    public init(counts: AggregateDelta, filter: DashboardFilter, minSamples: Int64) {
        // Filter choices, from every key with samples.
        var modelSamples: [String: Int64] = [:], osSamples: [Int: Int64] = [:], languageSamples: [String: Int64] = [:]
        var keySet = Set<SeriesKey>()
        var durationCounts: [Int: Int64] = [:], curveCounts: [Int: Int64] = [:]
        for (key, count) in counts.animations {
            modelSamples[key.series.model, default: 0] += count
            osSamples[key.series.osMajor, default: 0] += count
            languageSamples[key.series.language, default: 0] += count
            guard filter.matches(key.series) else { continue }
            keySet.insert(key.series)
            samples += count
            durationCounts[key.bin.durationMs, default: 0] += count
            curveCounts[key.bin.curve, default: 0] += count
        }
        (models, hiddenModels) = Self.choices(modelSamples)
        (osMajors, hiddenOSMajors) = Self.choices(osSamples)
        (languages, hiddenLanguages) = Self.choices(languageSamples)
        keys = keySet.count
        durations = Self.top(durationCounts)
        curves = Self.top(curveCounts)

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
            let ordered = bins.map { Panel(language: $0.key.language, orientation: $0.key.orientation,
                                           bins: $0.value.sorted { $0.key < $1.key }.map { Bin(halfPoints: $0.key, count: $0.value) },
                                           total: $0.value.values.reduce(0, +)) }
                .sorted { ($1.total, $0.language, $0.orientation.rawValue) < ($0.total, $1.language, $1.orientation.rawValue) }
            hiddenPanels = max(0, ordered.count - Self.maxPanels)
            panels = Array(ordered.prefix(Self.maxPanels))
        }

        // Cold start: the whole filter by bucket; per key only totals, then histograms for the keys shown.
        var coldTotals: [SeriesKey: (cold: Int64, warm: Int64)] = [:]
        for (key, count) in counts.coldStarts where filter.matches(key.series) {
            if key.preloaded {
                warmBuckets[key.bucket, default: 0] += count
                coldTotals[key.series, default: (0, 0)].warm += count
            } else {
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
        thinKeys = dockedByKey
            .smallest(Self.maxThinKeys) { a, b in
                let da = abs(a.value - minSamples), db = abs(b.value - minSamples)
                return (da, a.value, a.key) < (db, b.value, b.key)
            }
            .map { KeyCount(key: $0.key, count: $0.value) }
    }

    /// The `maxChoices` values with the most samples (then the smallest), sorted, and how many were left out.
    static func choices<Value: Comparable>(_ samples: [Value: Int64]) -> ([Value], Int) {
        let kept = samples.smallest(maxChoices) { ($1.value, $0.key) < ($0.value, $1.key) }.map(\.key).sorted()
        return (kept, samples.count - kept.count)
    }

    /// The `maxAnimationRows` values with the most samples, most first (then the smallest value).
    static func top(_ counts: [Int: Int64]) -> [ValueCount] {
        counts.smallest(maxAnimationRows) { ($1.value, $0.key) < ($0.value, $1.key) }.map { ValueCount(value: $0.key, count: $0.value) }
    }
}
