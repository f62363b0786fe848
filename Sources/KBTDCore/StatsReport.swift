/// One line of `kbtd stats`: what kbtd knows about one exact key.
public struct StatsRow: Sendable, Equatable {
    public var key: SeriesKey
    /// Every accepted sample of this key (show, hide, change; any placement).
    public var samples: Int64
    /// Docked show/change samples: the ones height estimates use.
    public var dockedSamples: Int64
    public var heightMode: Double?
    public var heightP10: Double?
    public var heightP90: Double?
    /// Median duration of show animations, seconds.
    public var medianShowDuration: Double?
    /// Share (0...1) of samples animated with curve 7.
    public var curve7Share: Double?
    public var coldStartP50: Double?
    public var coldStartP95: Double?
    public var coldStartPreloadedP50: Double?
    public var coldStartPreloadedP95: Double?
    public var coldStartSamples: Int64
    public var coldStartPreloadedSamples: Int64
}

/// Filters of `kbtd stats` (`--model`, `--language`, `--os`).
public struct StatsFilter: Sendable {
    public var model: String?
    public var language: String?
    public var osMajor: Int?

    public init(model: String? = nil, language: String? = nil, osMajor: Int? = nil) {
        self.model = model
        self.language = language
        self.osMajor = osMajor
    }

    public func matches(_ key: SeriesKey) -> Bool {
        (model == nil || model == key.model) && (language == nil || language == key.language)
            && (osMajor == nil || osMajor == key.osMajor)
    }
}

/// Builds `kbtd stats` rows from the store's counts (the whole store read as one delta).
public enum StatsReport {
    public static func rows(from counts: AggregateDelta, filter: StatsFilter = StatsFilter()) -> [StatsRow] {
        struct Accumulator {
            var samples: Int64 = 0
            var curve7: Int64 = 0
            var heights = CountHistogram()
            var showDurations = CountHistogram()
            var cold = CountHistogram()
            var coldPreloaded = CountHistogram()
        }
        var byKey: [SeriesKey: Accumulator] = [:]
        for (key, count) in counts.animations where filter.matches(key.series) {
            byKey[key.series, default: Accumulator()].samples += count
            if key.bin.curve == 7 { byKey[key.series, default: Accumulator()].curve7 += count }
            if key.event == .show { byKey[key.series, default: Accumulator()].showDurations.add(key.bin.durationMs, count) }
        }
        for (key, count) in counts.heights where key.placement == .docked && filter.matches(key.series) {
            byKey[key.series, default: Accumulator()].heights.add(key.halfPoints, count)
        }
        for (key, count) in counts.coldStarts where filter.matches(key.series) {
            if key.preloaded {
                byKey[key.series, default: Accumulator()].coldPreloaded.add(key.bucket, count)
            } else {
                byKey[key.series, default: Accumulator()].cold.add(key.bucket, count)
            }
        }
        return byKey.keys.sorted().map { key in
            let a = byKey[key]!
            return StatsRow(
                key: key, samples: a.samples, dockedSamples: a.heights.total,
                heightMode: a.heights.mode.map(HeightBin.points),
                heightP10: a.heights.percentile(0.10).map(HeightBin.points),
                heightP90: a.heights.percentile(0.90).map(HeightBin.points),
                medianShowDuration: a.showDurations.percentile(0.5).map { Double($0) / 1000 },
                curve7Share: a.samples > 0 ? Double(a.curve7) / Double(a.samples) : nil,
                coldStartP50: a.cold.percentile(0.50).map(LogBucket.value),
                coldStartP95: a.cold.percentile(0.95).map(LogBucket.value),
                coldStartPreloadedP50: a.coldPreloaded.percentile(0.50).map(LogBucket.value),
                coldStartPreloadedP95: a.coldPreloaded.percentile(0.95).map(LogBucket.value),
                coldStartSamples: a.cold.total, coldStartPreloadedSamples: a.coldPreloaded.total)
        }
    }
}
