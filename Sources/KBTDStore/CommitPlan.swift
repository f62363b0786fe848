import KBTDCore

/// One group commit's decisions, computed once from its batches and applied by
/// each store (`SQLiteTelemetryStore.apply`, `PostgresTelemetryStore.apply`):
/// which batch ids to claim, which batches are new once claimed (the rest are
/// retries, counting nothing), the counts they add, the keys a trusted peer
/// reported, the hours' ingest counts and what the batches spent of the day's
/// budgets. A store only claims the ids and writes what the plan says.
///
///     var plan = CommitPlan(batches)
///     plan.settle(claimed: try claim(plan.claims))   // the ids the database did not have
///     return try apply(plan)
public struct CommitPlan: Sendable {
    public let batches: [PendingBatch]
    /// The first batch of each distinct id, ids in sorted order: what the store
    /// claims (two nodes claiming overlapping retries lock the ids alike).
    public let claims: [PendingBatch]
    /// Per claim (`claims`' order): the index of that batch in `batches`, its id's first occurrence.
    private let claimIndices: [Int]
    /// Per batch: new (claimed here, its first occurrence in the commit) or a retry.
    public private(set) var stored: [Bool] = []
    /// The counts of the new batches.
    public private(set) var added = AggregateDelta()
    /// Keys a trusted peer reported in this commit (confirmed at once).
    public private(set) var trustedKeys: Set<SeriesKey> = []
    /// Every key with a count in `added` (its `seriesKeys`, found once).
    public private(set) var addedKeys: Set<SeriesKey> = []
    /// The commit's time: its latest batch's receipt (Unix seconds).
    public let now: Int64

    public init(_ batches: [PendingBatch]) {
        self.batches = batches
        // Backwards, so each id's first occurrence is the index written last: one hash of an id a batch.
        var first: [String: Int] = [:]
        first.reserveCapacity(batches.count)
        for index in batches.indices.reversed() { first[batches[index].batchID] = index }
        claimIndices = first.values.sorted { batches[$0].batchID < batches[$1].batchID }
        claims = claimIndices.map { batches[$0] }
        now = batches.map(\.receivedAt).max() ?? 0
    }

    /// Decides, from the ids the store's claim took (ids it did not have yet),
    /// which batches are new, and adds up what they bring.
    ///
    /// The new batches' counts are summed in one pass into tables sized once
    /// (`AggregateDelta(summing:)`: what merging them one by one gave; a single new batch's
    /// counts are taken as they are), and when every new batch is a trusted peer's the trusted
    /// keys are the commit's keys, found once.
    public mutating func settle(claimed: Set<String>) {
        settle(taken: claims.map { claimed.contains($0.batchID) })
    }

    /// `settle(claimed:)` from what each claim gave, in `claims`' order (`taken[i]`: the store
    /// did not have `claims[i]`'s id and stored it now), for a store that claims the ids one at a
    /// time: no set of ids built, no id hashed again.
    public mutating func settle(taken: [Bool]) {
        precondition(taken.count == claims.count, "one answer a claim")
        // A claim is its id's first occurrence in the commit: the batches stored are the claims taken.
        stored = [Bool](repeating: false, count: batches.count)
        for (claim, index) in claimIndices.enumerated() where taken[claim] { stored[index] = true }
        trustedKeys = []
        var newDeltas: [AggregateDelta] = []
        newDeltas.reserveCapacity(batches.count)
        var allTrusted = true
        var trustedBatches: [Int] = []
        for (index, batch) in batches.enumerated() where stored[index] {
            newDeltas.append(batch.delta)
            if batch.source == .trusted { trustedBatches.append(index) } else { allTrusted = false }
        }
        added = AggregateDelta(summing: newDeltas)
        addedKeys = added.seriesKeys
        if allTrusted {
            trustedKeys = addedKeys
        } else {
            for index in trustedBatches { trustedKeys.formUnion(batches[index].delta.seriesKeys) }
        }
    }

    /// Batches, samples and rejected samples the new batches add per UTC hour, oldest first.
    public var hourlyIngest: [HourlyIngest] {
        var hours: [Int64: HourlyIngest] = [:]
        for (batch, isNew) in zip(batches, stored) where isNew {
            let hour = batch.receivedAt / 3600 * 3600
            hours[hour, default: HourlyIngest(hour: hour, batches: 0, samples: 0, rejected: 0)].batches += 1
            hours[hour]!.samples += Int64(batch.accepted)
            hours[hour]!.rejected += Int64(batch.rejected)
        }
        return hours.values.sorted { $0.hour < $1.hour }
    }

    /// What the new untrusted batches spent of the daily budgets, one ledger per day.
    public var ledgers: [SourceLedger] { SourceLedger.spent(by: batches, stored: stored) }

    /// What the in-memory index takes from this commit: the counts of the keys
    /// in `passing` (already admitted, or admitted by another node), and every
    /// screen count (screens are counted per model, not per key). Of their release and screen
    /// sources only `newReleaseSources` and `newScreenSources`, those the commit stored for the
    /// first time: the index counts every such source it is given (`HeightIndex.apply`).
    /// When every key of the commit passes (the usual case once keys are admitted), that is
    /// `added` itself, not a filtered copy.
    public func indexDelta(passing: Set<SeriesKey>, newReleaseSources: [ReleaseKey: Set<SourceID>],
                           newScreenSources: [ScreenVariantKey: Set<SourceID>]) -> AggregateDelta {
        // Of equal size, `passing` holds every key only if it is `addedKeys` (the same storage: O(1)).
        let everyKey = passing.count == addedKeys.count ? passing == addedKeys
            : passing.count > addedKeys.count && addedKeys.allSatisfy(passing.contains)
        var delta = everyKey ? added : added.filter { passing.contains($0) }
        delta.screens = added.screens
        delta.releaseSources = newReleaseSources.filter { passing.contains($0.key.series) && !$0.value.isEmpty }
        delta.screenSources = newScreenSources.filter { passing.contains($0.key.series) && !$0.value.isEmpty }
        return delta
    }
}
