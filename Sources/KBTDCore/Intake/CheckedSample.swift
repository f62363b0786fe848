/// One sample that passed its checks, as the scan holds it: numbers, and
/// language and keyboard type as indices of the batch's interned strings
/// (a `Sample` is built from it only by `BatchIntake.validate`).
struct CheckedSample {
    var t: Double
    var event: KeyboardEvent
    var language: Int
    var orientation: Orientation
    var keyboardType: Int
    var height: Double
    var accessoryHeight: Double
    var safeAreaBottom: Double
    var duration: Double
    var curve: Int
    var coldStartMs: Double?
    var preloaded: Bool
    var floating: Bool
    var hardwareKeyboard: Bool

    /// As `Sample.placement`.
    var placement: Placement { hardwareKeyboard ? .hardware : floating ? .floating : .docked }
}

/// The accepted samples of one batch, counted as they are checked: each
/// goes to its key's `SeriesCounts` (the same tables `AggregateDelta(batch:)`
/// fills), found by interned indices, never by strings.
struct SampleCounter {
    /// A key within the batch (the device is the batch's).
    struct Series: Equatable {
        var language: Int
        var orientation: Orientation
        var keyboardType: Int
    }

    /// The batch's keys in the order of their first sample, with their counts.
    var series: [Series] = []
    var counts: [SeriesCounts] = []
    /// Each accepted sample's key, in order (what screening a refused key needs).
    var sampleKeys: [Int32] = []
    /// Keys by `Series` once a batch has more than a few (linear search before).
    var lookup: [Int: Int] = [:]
    var last = -1

    static let linearLimit = 16

    @inline(__always)
    mutating func add(_ sample: CheckedSample) {
        let key = Series(language: sample.language, orientation: sample.orientation, keyboardType: sample.keyboardType)
        var index = last
        if index < 0 || series[index] != key {
            index = find(key)
            last = index
        }
        counts[index].add(event: sample.event, duration: sample.duration, curve: sample.curve, placement: sample.placement,
                          systemHeight: sample.height - sample.accessoryHeight, safeAreaBottom: sample.safeAreaBottom,
                          coldStartMs: sample.coldStartMs, preloaded: sample.preloaded)
        sampleKeys.append(Int32(truncatingIfNeeded: index))
    }

    /// Accepted samples per key (counted from `sampleKeys` once, not a third array to update per sample).
    var sizes: [Int] {
        var sizes = [Int](repeating: 0, count: series.count)
        for key in sampleKeys { sizes[Int(key)] += 1 }
        return sizes
    }

    mutating func find(_ key: Series) -> Int {
        let packed = key.language << 32 | key.keyboardType << 1 | (key.orientation == .landscape ? 1 : 0)
        if series.count <= Self.linearLimit {
            if let index = series.firstIndex(of: key) { return index }
        } else if let index = lookup[packed] {
            return index
        }
        series.append(key)
        counts.append(SeriesCounts())
        let index = series.count - 1
        if series.count == Self.linearLimit + 1 {
            for (i, known) in series.enumerated() {
                lookup[known.language << 32 | known.keyboardType << 1 | (known.orientation == .landscape ? 1 : 0)] = i
            }
        } else if series.count > Self.linearLimit {
            lookup[packed] = index
        }
        return index
    }
}
