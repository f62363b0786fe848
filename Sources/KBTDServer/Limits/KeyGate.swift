import KBTDCore
import KBTDStore
import Synchronization

/// The shared `KeyAdmission`: which samples may create new aggregation keys.
final class KeyGate: Sendable {
    private let admission: Mutex<KeyAdmission>

    init(limits: KeyLimits) {
        admission = Mutex(KeyAdmission(limits: limits))
    }

    func update(_ limits: KeyLimits) { admission.withLock { $0.limits = limits } }

    func remember(_ keys: [SeriesKey]) { admission.withLock { for key in keys { $0.remember(key) } } }

    /// Remembers every key a store's `forEachKey` lists (start-up, SQLite), taking the lock once
    /// per 10,000 keys, not per key.
    func remember(everyKeyOf forEachKey: ((SeriesKey) -> Void) throws -> Void) throws {
        var batch: [SeriesKey] = []
        batch.reserveCapacity(10_000)
        try forEachKey { key in
            batch.append(key)
            if batch.count == 10_000 {
                remember(batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
        remember(batch)
    }

    /// Start-up: the day's per-network new-key counts as the store kept them.
    func restore(_ ledger: SourceLedger) { admission.withLock { $0.restore(day: ledger.day, created: ledger.newKeys) } }

    /// Another node's new keys of the day, per network (PostgreSQL catch-up).
    func absorb(_ ledger: SourceLedger) {
        guard !ledger.newKeys.isEmpty else { return }
        admission.withLock { $0.absorb(day: ledger.day, created: ledger.newKeys) }
    }

    func forget(_ keys: [SeriesKey]) { admission.withLock { for key in keys { $0.forget(key) } } }

    var keyCount: Int { admission.withLock { $0.keyCount } }

    /// `screen(_:source:group:now:)` for a counted batch: the same decisions
    /// (asked once per key, in the order of the keys' first samples), the same
    /// rejections at the same indices, the same refusal counts and created keys.
    func screen(_ batch: inout CountedBatch, source: SourceID, group: SourceID? = nil, now: Double)
        -> (refusals: [KeyRefusal: Int], created: Int) {
        var refusals: [KeyRefusal: Int] = [:]
        var reasons: [Int: String] = [:]
        let created = admission.withLock { admission in
            let before = admission.keyCount
            for (index, key) in batch.keys.enumerated() {
                guard let refusal = admission.admit(key, source: source, group: group, now: now) else { continue }
                refusals[refusal, default: 0] += batch.sampleCount(ofKey: index)
                reasons[index] = refusal.reason(admission.limits)
            }
            return admission.keyCount - before
        }
        batch.refuse(reasons)
        return (refusals, created)
    }

    /// Removes the samples whose key may not be created from `batch`, adding
    /// each to its `rejected` list with field `key`; returns the refusals by kind
    /// and how many new keys the batch created (counted in an untrusted source's quota).
    /// `group` is the source's network group (`ClientNetwork.group`), which the capacity rules count by.
    func screen(_ batch: inout ValidatedBatch, source: SourceID, group: SourceID? = nil, now: Double)
        -> (refusals: [KeyRefusal: Int], created: Int) {
        var refusals: [KeyRefusal: Int] = [:]
        var created = 0
        admission.withLock { admission in
            let before = admission.keyCount
            defer { created = admission.keyCount - before }
            var decisions: [SeriesKey: KeyRefusal?] = [:]
            var kept: [Sample] = []
            kept.reserveCapacity(batch.samples.count)
            var rejected: [SampleError] = []
            // Accepted samples fill the indices the validator did not reject, in order.
            var faults = batch.rejected.makeIterator()
            var nextFault = faults.next()
            var index = 0
            for sample in batch.samples {
                while let fault = nextFault, fault.index == index {
                    rejected.append(fault)
                    nextFault = faults.next()
                    index += 1
                }
                let key = SeriesKey(model: batch.device.model, osMajor: batch.device.osMajor, language: sample.language,
                                    orientation: sample.orientation, keyboardType: sample.keyboardType)
                let decision: KeyRefusal?
                if let known = decisions[key] {
                    decision = known
                } else {
                    decision = admission.admit(key, source: source, group: group, now: now)
                    decisions[key] = decision
                }
                if let refusal = decision {
                    refusals[refusal, default: 0] += 1
                    rejected.append(SampleError(index: index, field: "key", reason: refusal.reason(admission.limits)))
                } else {
                    kept.append(sample)
                }
                index += 1
            }
            while let fault = nextFault {
                rejected.append(fault)
                nextFault = faults.next()
            }
            guard !refusals.isEmpty else { return }
            batch.samples = kept
            batch.rejected = rejected
        }
        return (refusals, created)
    }
}
