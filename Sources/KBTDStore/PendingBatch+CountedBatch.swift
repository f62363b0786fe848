import KBTDCore

extension PendingBatch {
    /// A counted batch ready to be stored (its counts are already reduced).
    public init(_ batch: CountedBatch, receivedAt: Int64) {
        self.init(batchID: batch.batchID, receivedAt: receivedAt, model: batch.device.model, os: batch.device.os,
                  accepted: batch.accepted, rejected: batch.rejected.count, delta: batch.delta())
    }
}
