/// How often one (duration, curve) animated a show.
public struct AnimationCount: Sendable, Equatable {
    public var bin: AnimationBin
    public var count: Int64
}

/// What one level of the fallback chain knows about one key.
///
/// Laid out for an index of a million keys: a key almost always has one
/// height, one safe area, one animation and, on its own level, one source, so
/// the first source and the first animation are held inline like a
/// histogram's first bin, and a typical `LevelStats` makes no heap allocation.
public struct LevelStats: Sendable, Equatable {
    /// Docked system heights (accessory removed), in half points: every sample.
    public var heights = CountHistogram()
    /// The same bins as the estimator weighs them (capped per untrusted source).
    public var votes = CountHistogram()
    /// Docked bottom safe areas, in half points.
    public var safeAreas = CountHistogram()

    /// Sources in the order they were added: `firstSource` (when `hasFirstSource`), then `laterSources`.
    private var hasFirstSource = false
    private var firstSource = SourceID.trusted
    private var laterSources: [SourceID] = []
    /// The show animations: one inline (`soleAnimation`), or all of them in `animationList`.
    private var soleAnimation = InlineAnimation.none
    private var animationList: [AnimationCount] = []

    static let sourceLimit = 8

    public init() {}

    /// Stats holding exactly these parts, sources and animations in this order (for tests and references).
    init(heights: CountHistogram, votes: CountHistogram, safeAreas: CountHistogram, sources: [SourceID],
         showAnimations: [AnimationCount]) {
        self.heights = heights
        self.votes = votes
        self.safeAreas = safeAreas
        for source in sources { appendSource(source) }
        if showAnimations.count == 1, let inline = InlineAnimation(showAnimations[0]) {
            soleAnimation = inline
        } else {
            animationList = showAnimations
        }
    }

    /// Bins one histogram of the index keeps (see `CountHistogram.merge(_:limit:)`).
    static let binLimit = 8

    /// Sources that reported docked heights here, at most `LevelStats.sourceLimit` kept (and `trusted`).
    public var sources: [SourceID] {
        hasFirstSource ? [firstSource] + laterSources : []
    }

    private var sourceCount: Int { hasFirstSource ? 1 + laterSources.count : 0 }

    func hasSource(_ source: SourceID) -> Bool {
        (hasFirstSource && firstSource == source) || laterSources.contains(source)
    }

    private mutating func appendSource(_ source: SourceID) {
        if hasFirstSource {
            laterSources.append(source)
        } else {
            firstSource = source
            hasFirstSource = true
        }
    }

    /// Animation of `show` events.
    public var showAnimations: [AnimationCount] {
        if let sole = soleAnimation.value { return [sole] }
        return animationList
    }

    /// `keepingTies`: the index applying a commit (see `CountHistogram.merge(_:limit:keepingTies:)`).
    mutating func merge(_ other: LevelStats, keepingTies: Bool = false) {
        heights.merge(other.heights, limit: Self.binLimit, keepingTies: keepingTies)
        votes.merge(other.votes, limit: Self.binLimit, keepingTies: keepingTies)
        if other.sourceCount == 1 {
            addSource(other.firstSource)
        } else if other.sourceCount > 1 {
            addSources(Set(other.sources))
        }
        safeAreas.merge(other.safeAreas, limit: Self.binLimit, keepingTies: keepingTies)
        if let sole = other.soleAnimation.value {
            addShowAnimation(sole.bin, sole.count)
        } else {
            for entry in other.animationList { addShowAnimation(entry.bin, entry.count) }
        }
    }

    mutating func addSources(_ new: Set<SourceID>) {
        for source in new.sorted() { addSource(source) }
    }

    mutating func addSources(_ new: [SourceID]) { addSources(Set(new)) }

    private mutating func addSource(_ source: SourceID) {
        guard !hasSource(source) else { return }
        if sourceCount < Self.sourceLimit || source == .trusted { appendSource(source) }
    }

    mutating func addShowAnimation(_ bin: AnimationBin, _ count: Int64) {
        if let sole = soleAnimation.value, sole.bin == bin {
            soleAnimation.count += count
            return
        }
        if soleAnimation.value == nil, animationList.isEmpty, let inline = InlineAnimation(AnimationCount(bin: bin, count: count)) {
            soleAnimation = inline
            return
        }
        var list = showAnimations
        soleAnimation = .none
        animationList = []
        if let index = list.firstIndex(where: { $0.bin == bin }) {
            list[index].count += count
        } else if list.count < Self.binLimit {
            list.append(AnimationCount(bin: bin, count: count))
        } else if let weakest = list.indices.min(by: { list[$0].count < list[$1].count }),
                  list[weakest].count < count {
            // Bounded like the histograms: the least frequent (duration, curve) gives way.
            list[weakest] = AnimationCount(bin: bin, count: count)
        }
        // One canonical form, so `==` compares content.
        if list.count == 1, let inline = InlineAnimation(list[0]) {
            soleAnimation = inline
        } else {
            animationList = list
        }
    }

    /// Whether enough independent sources stand behind this level.
    func hasSources(_ minimum: Int) -> Bool {
        hasSource(.trusted) || sourceCount >= minimum
    }

    /// The most frequent (duration, curve); ties go to the shorter duration then lower curve.
    var animationMode: AnimationBin? {
        if let sole = soleAnimation.value { return sole.bin }
        return animationList.max { a, b in
            (a.count, -a.bin.durationMs, -a.bin.curve) < (b.count, -b.bin.durationMs, -b.bin.curve)
        }?.bin
    }
}

/// One (duration, curve, count) in 16 bytes; `none` when there is none.
private struct InlineAnimation: Sendable, Equatable {
    var durationMs: Int32
    var curve: Int32
    var count: Int64

    static let none = InlineAnimation(durationMs: .min, curve: 0, count: 0)

    init(durationMs: Int32, curve: Int32, count: Int64) {
        self.durationMs = durationMs
        self.curve = curve
        self.count = count
    }

    /// Nil when the bin does not fit (it then stays in the list).
    init?(_ animation: AnimationCount) {
        guard let duration = Int32(exactly: animation.bin.durationMs), duration != .min,
              let curve = Int32(exactly: animation.bin.curve) else { return nil }
        self.init(durationMs: duration, curve: curve, count: animation.count)
    }

    var value: AnimationCount? {
        durationMs == .min ? nil
            : AnimationCount(bin: AnimationBin(durationMs: Int(durationMs), curve: Int(curve)), count: count)
    }
}
