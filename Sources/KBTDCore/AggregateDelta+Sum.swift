extension AggregateDelta {
    /// The counts of `deltas` added up: what merging them into the first one by one gives
    /// (`merge(_:)`, the reference `AggregateSumTests` checks it against), for a group commit's
    /// batches (`CommitPlan.settle`).
    ///
    /// Each table is sized once for every entry the deltas bring (an upper bound on the sum's), so
    /// no table grows and rehashes what it holds on the way; a key's sources already in the sum
    /// take the new ones in place (`merge`'s `union` builds a new set each time). A single
    /// delta is returned as it is.
    ///
    ///     let added = AggregateDelta(summing: newBatches.map(\.delta))
    public init(summing deltas: [AggregateDelta]) {
        self.init()
        guard deltas.count > 1 else {
            if let only = deltas.first { self = only }
            return
        }
        var sizes = (heights: 0, animations: 0, coldStarts: 0, safeAreas: 0, votes: 0, sources: 0, screens: 0,
                     releases: 0, releaseSources: 0, screenCounts: 0, screenSources: 0, dayVotes: 0, daySources: 0)
        for delta in deltas {
            sizes.heights += delta.heights.count
            sizes.animations += delta.animations.count
            sizes.coldStarts += delta.coldStarts.count
            sizes.safeAreas += delta.safeAreas.count
            sizes.votes += delta.votes.count
            sizes.sources += delta.sources.count
            sizes.screens += delta.screens.count
            sizes.releases += delta.releases.count
            sizes.releaseSources += delta.releaseSources.count
            sizes.screenCounts += delta.screenCounts.count
            sizes.screenSources += delta.screenSources.count
            sizes.dayVotes += delta.dayVotes.count
            sizes.daySources += delta.daySources.count
        }
        heights = Self.sum(deltas, \.heights, capacity: sizes.heights)
        animations = Self.sum(deltas, \.animations, capacity: sizes.animations)
        coldStarts = Self.sum(deltas, \.coldStarts, capacity: sizes.coldStarts)
        safeAreas = Self.sum(deltas, \.safeAreas, capacity: sizes.safeAreas)
        votes = Self.sum(deltas, \.votes, capacity: sizes.votes)
        sources = Self.union(deltas, \.sources, capacity: sizes.sources)
        screens = Self.sum(deltas, \.screens, capacity: sizes.screens)
        releases = Self.sum(deltas, \.releases, capacity: sizes.releases)
        releaseSources = Self.union(deltas, \.releaseSources, capacity: sizes.releaseSources)
        screenCounts = Self.sum(deltas, \.screenCounts, capacity: sizes.screenCounts)
        screenSources = Self.union(deltas, \.screenSources, capacity: sizes.screenSources)
        dayVotes = Self.sum(deltas, \.dayVotes, capacity: sizes.dayVotes)
        daySources = Self.union(deltas, \.daySources, capacity: sizes.daySources)
    }

    /// One table of every delta added up, in a dictionary sized once for `capacity` entries.
    @inline(__always)
    private static func sum<Key: Hashable>(_ deltas: [AggregateDelta], _ table: KeyPath<AggregateDelta, [Key: Int64]>,
                                           capacity: Int) -> [Key: Int64] {
        var sum: [Key: Int64] = [:]
        guard capacity > 0 else { return sum }
        sum.reserveCapacity(capacity)
        for delta in deltas {
            for (key, count) in delta[keyPath: table] { sum[key, default: 0] += count }
        }
        return sum
    }

    /// `sum` for the release counts (samples and votes).
    @inline(__always)
    private static func sum<Key: Hashable>(_ deltas: [AggregateDelta], _ table: KeyPath<AggregateDelta, [Key: ReleaseCount]>,
                                           capacity: Int) -> [Key: ReleaseCount] {
        var sum: [Key: ReleaseCount] = [:]
        guard capacity > 0 else { return sum }
        sum.reserveCapacity(capacity)
        for delta in deltas {
            for (key, count) in delta[keyPath: table] { sum[key, default: .zero] += count }
        }
        return sum
    }

    /// The union of every delta's sources per key: a key's first set is shared as it is (no
    /// copy), later ones are added to it in place; a set that adds nothing (a trusted peer's
    /// `[.trusted]` again) changes nothing.
    @inline(__always)
    private static func union<Key: Hashable>(_ deltas: [AggregateDelta], _ table: KeyPath<AggregateDelta, [Key: Set<SourceID>]>,
                                             capacity: Int) -> [Key: Set<SourceID>] {
        var union: [Key: Set<SourceID>] = [:]
        guard capacity > 0 else { return union }
        union.reserveCapacity(capacity)
        for delta in deltas {
            for (key, ids) in delta[keyPath: table] {
                if let index = union.index(forKey: key) {
                    if !ids.isSubset(of: union.values[index]) { union.values[index].formUnion(ids) }
                } else {
                    union[key] = ids
                }
            }
        }
        return union
    }
}
