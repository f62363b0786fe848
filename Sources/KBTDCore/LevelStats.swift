/// How often one (duration, curve) animated a show.
public struct AnimationCount: Sendable, Equatable {
    public var bin: AnimationBin
    public var count: Int64
}

/// What one level of the fallback chain knows about one key.
public struct LevelStats: Sendable, Equatable {
    /// Docked system heights (accessory removed), in half points: every sample.
    public var heights = CountHistogram()
    /// The same bins as the estimator weighs them (capped per untrusted source).
    public var votes = CountHistogram()
    /// Sources that reported docked heights here, at most `LevelStats.sourceLimit` kept.
    public private(set) var sources: [SourceID] = []
    static let sourceLimit = 8
    /// Docked bottom safe areas, in half points.
    public var safeAreas = CountHistogram()
    /// Animation of `show` events.
    public private(set) var showAnimations: [AnimationCount] = []

    public init() {}

    /// Bins one histogram of the index keeps (see `CountHistogram.merge(_:limit:)`).
    static let binLimit = 8

    mutating func merge(_ other: LevelStats) {
        heights.merge(other.heights, limit: Self.binLimit)
        votes.merge(other.votes, limit: Self.binLimit)
        addSources(other.sources)
        safeAreas.merge(other.safeAreas, limit: Self.binLimit)
        for entry in other.showAnimations { addShowAnimation(entry.bin, entry.count) }
    }

    mutating func addSources(_ new: Set<SourceID>) {
        for source in new.sorted() where !sources.contains(source) {
            if sources.count < Self.sourceLimit || source == .trusted { sources.append(source) }
        }
    }

    mutating func addSources(_ new: [SourceID]) { addSources(Set(new)) }

    mutating func addShowAnimation(_ bin: AnimationBin, _ count: Int64) {
        if let index = showAnimations.firstIndex(where: { $0.bin == bin }) {
            showAnimations[index].count += count
        } else if showAnimations.count < Self.binLimit {
            showAnimations.append(AnimationCount(bin: bin, count: count))
        } else if let weakest = showAnimations.indices.min(by: { showAnimations[$0].count < showAnimations[$1].count }),
                  showAnimations[weakest].count < count {
            // Bounded like the histograms: the least frequent (duration, curve) gives way.
            showAnimations[weakest] = AnimationCount(bin: bin, count: count)
        }
    }

    /// Whether enough independent sources stand behind this level.
    func hasSources(_ minimum: Int) -> Bool {
        sources.contains(.trusted) || sources.count >= minimum
    }

    /// The most frequent (duration, curve); ties go to the shorter duration then lower curve.
    var animationMode: AnimationBin? {
        showAnimations.max { a, b in
            (a.count, -a.bin.durationMs, -a.bin.curve) < (b.count, -b.bin.durationMs, -b.bin.curve)
        }?.bin
    }
}
