/// A batch whose batch-level fields are valid, with its accepted samples
/// already reduced to counts per key (`BatchIntake.count`): what
/// `ValidatedBatch` followed by `AggregateDelta(batch:)` gives, without a
/// `Sample` per sample. Keys can still be refused as a whole (`refuse(_:)`),
/// their samples becoming rejected ones at their indices.
///
///     var batch = try BatchIntake.count(json: bytes, now: now, rules: rules)
///     batch.refuse([0: "too many new keys"])
///     let delta = batch.delta()
public struct CountedBatch: Sendable {
    /// Lower-cased canonical UUID: the idempotency key.
    public var batchID: String
    public var device: Device
    /// The samples rejected, by index (as `ValidatedBatch.rejected`).
    public private(set) var rejected: [SampleError]
    /// The batch's keys, in the order of their first accepted sample.
    public private(set) var keys: [SeriesKey]
    var counts: [SeriesCounts]
    /// Accepted samples per key.
    var sizes: [Int]
    /// Each accepted sample's index in `keys`, in order.
    var sampleKeys: [Int32]

    init(batchID: String, device: Device, rejected: [SampleError], keys: [SeriesKey], counts: [SeriesCounts],
         sizes: [Int], sampleKeys: [Int32]) {
        self.batchID = batchID
        self.device = device
        self.rejected = rejected
        self.keys = keys
        self.counts = counts
        self.sizes = sizes
        self.sampleKeys = sampleKeys
    }

    /// How many samples were accepted (`ValidatedBatch.samples.count`).
    public var accepted: Int { sampleKeys.count }

    /// How many accepted samples the key at `index` in `keys` has.
    public func sampleCount(ofKey index: Int) -> Int { sizes[index] }

    /// Removes the samples of the keys at the indices in `reasons` (indices
    /// into `keys`): each becomes a rejected sample with field `key` and the
    /// key's reason, at its index in the batch (what filtering a
    /// `ValidatedBatch`'s samples one by one gives).
    public mutating func refuse(_ reasons: [Int: String]) {
        guard !reasons.isEmpty else { return }
        var merged: [SampleError] = []
        merged.reserveCapacity(rejected.count + reasons.keys.reduce(0) { $0 + sizes[$1] })
        var kept: [Int32] = []
        kept.reserveCapacity(sampleKeys.count)
        // The keys that stay, renumbered in order.
        var renumbered = [Int32](repeating: -1, count: keys.count)
        var next: Int32 = 0
        for i in keys.indices where reasons[i] == nil {
            renumbered[i] = next
            next += 1
        }
        // Accepted samples fill the indices the validator did not reject, in order.
        var faults = rejected.makeIterator()
        var nextFault = faults.next()
        var index = 0
        for key in sampleKeys {
            while let fault = nextFault, fault.index == index {
                merged.append(fault)
                nextFault = faults.next()
                index += 1
            }
            if let reason = reasons[Int(key)] {
                merged.append(SampleError(index: index, field: "key", reason: reason))
            } else {
                kept.append(renumbered[Int(key)])
            }
            index += 1
        }
        while let fault = nextFault {
            merged.append(fault)
            nextFault = faults.next()
        }
        let staying = keys.indices.filter { reasons[$0] == nil }
        keys = staying.map { keys[$0] }
        counts = staying.map { counts[$0] }
        sizes = staying.map { sizes[$0] }
        rejected = merged
        sampleKeys = kept
    }

    /// The counts the accepted samples add (equal to `AggregateDelta(batch:)`
    /// of the same batch with the same samples).
    public func delta() -> AggregateDelta {
        var delta = AggregateDelta()
        // Each table sized once for its entries (each key's are distinct), not grown step by step.
        var sizes = (animations: 0, heights: 0, votes: 0, safeAreas: 0, coldStarts: 0)
        for counts in counts {
            sizes.animations += counts.animations.count
            sizes.heights += counts.heights.count
            sizes.votes += counts.votes.count
            sizes.safeAreas += counts.safeAreas.count
            sizes.coldStarts += counts.coldStarts.count
        }
        delta.animations.reserveCapacity(sizes.animations)
        delta.heights.reserveCapacity(sizes.heights)
        delta.votes.reserveCapacity(sizes.votes)
        delta.safeAreas.reserveCapacity(sizes.safeAreas)
        delta.coldStarts.reserveCapacity(sizes.coldStarts)
        for (key, counts) in zip(keys, counts) {
            counts.flush(key, into: &delta)
        }
        if let screen = device.screen, accepted > 0 {
            delta.screens[ModelScreenKey(model: device.model, screen: screen), default: 0] += 1
        }
        return delta
    }
}
