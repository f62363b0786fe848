/// First-show latency of one model on one OS major, without and with pre-warming: the buckets
/// (`LogBucket`) of every key's cold starts added together. `GET /v1/heights` and `kbtd export`
/// serve it back (`HeightEstimator.coldStart`) so an app can decide whether pre-warming its
/// keyboard is worth it on this phone.
public struct ColdStartCounts: Sendable, Equatable {
    /// Cold starts of apps that did not pre-warm the keyboard.
    public var cold = CountHistogram()
    /// Cold starts of apps that did (`preloaded`).
    public var prewarmed = CountHistogram()

    public init() {}

    mutating func add(_ key: ColdStartCountKey, _ count: Int64) {
        if key.preloaded { prewarmed.add(key.bucket, count) } else { cold.add(key.bucket, count) }
    }

    mutating func merge(_ other: ColdStartCounts) {
        cold.merge(other.cold)
        prewarmed.merge(other.prewarmed)
    }
}

/// The index's cold-start figures are kept per (model, OS major): a handful per model.
struct ColdStartScope: Hashable, Sendable {
    var model: String
    var osMajor: Int
}

extension HeightEstimator {
    /// `cold_start` of a `/v1/heights` answer: the model's first-show latency on `osMajor` (on
    /// every major without one), `without_prewarm` and `with_prewarm`, each with its p50, p90 (ms)
    /// and samples. A side is listed when it has `min_samples` cold starts and the model's keys on
    /// that major have `min_sources` networks (or a trusted peer), the support a height needs;
    /// nil when neither side is.
    public func coldStart(model: String, osMajor: Int?, in index: some HeightLevels) -> JSONOutput? {
        guard let counts = index.coldStarts(model: model, osMajor: osMajor),
              counts.cold.total >= settings.minSamples || counts.prewarmed.total >= settings.minSamples,
              modelHasSources(model, osMajor: osMajor, in: index) else { return nil }
        var sides: [(String, JSONOutput)] = []
        for (name, histogram) in [("without_prewarm", counts.cold), ("with_prewarm", counts.prewarmed)]
        where histogram.total >= settings.minSamples {
            guard let p50 = histogram.percentile(0.5), let p90 = histogram.percentile(0.9) else { continue }
            sides.append((name, .object([("p50_ms", .double(Self.tenths(LogBucket.value(p50)))),
                                         ("p90_ms", .double(Self.tenths(LogBucket.value(p90)))),
                                         ("samples", .int(histogram.total))])))
        }
        return sides.isEmpty ? nil : .object(sides)
    }

    /// Whether the model's keys on `osMajor` (on any major without one) have `min_sources`
    /// distinct sources together, or a trusted one.
    func modelHasSources(_ model: String, osMajor: Int?, in index: some HeightLevels) -> Bool {
        var seen = Set<SourceID>()
        let majors = osMajor.map { [$0] } ?? Array(index.osMajors)
        for key in index.languages(ofModel: model) {
            for major in majors {
                guard let stats = index.series(SeriesKey(model: model, osMajor: major, language: key.language,
                                                         orientation: key.orientation, keyboardType: key.keyboardType))
                else { continue }
                if stats.hasSource(.trusted) { return true }
                seen.formUnion(stats.sources)
                if seen.count >= settings.minSources { return true }
            }
        }
        return false
    }

    private static func tenths(_ value: Double) -> Double { (value * 10).rounded() / 10 }
}
