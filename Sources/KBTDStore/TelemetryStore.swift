import KBTDCore

/// A batch ready to be stored: its receipt fields and the counts it adds.
public struct PendingBatch: Sendable {
    public var batchID: String
    public var receivedAt: Int64
    public var model: String
    public var os: String
    public var accepted: Int
    public var rejected: Int
    public var delta: AggregateDelta

    public init(batchID: String, receivedAt: Int64, model: String, os: String, accepted: Int, rejected: Int, delta: AggregateDelta) {
        self.batchID = batchID
        self.receivedAt = receivedAt
        self.model = model
        self.os = os
        self.accepted = accepted
        self.rejected = rejected
        self.delta = delta
    }

    public init(_ batch: ValidatedBatch, receivedAt: Int64) {
        self.init(batchID: batch.batchID, receivedAt: receivedAt, model: batch.device.model, os: batch.device.os,
                  accepted: batch.samples.count, rejected: batch.rejected.count, delta: AggregateDelta(batch: batch))
    }
}

/// What a commit did: per batch whether it was new (false: a retry of a stored
/// batch id, counted nothing), and the counts it actually added.
public struct CommitResult: Sendable {
    public var stored: [Bool]
    public var added: AggregateDelta
}

/// Durable storage of aggregates and seen batch ids. SQLite now; a PostgreSQL
/// backend for stateless ingest nodes later. One writer uses an instance from
/// one thread; implementations need not be thread-safe.
public protocol TelemetryStore: AnyObject {
    /// Stores all `batches` in one durable transaction, or none of them (throws).
    func commit(_ batches: [PendingBatch]) throws -> CommitResult
    /// Every count in the store, read as one delta from empty.
    func loadCounts() throws -> AggregateDelta
    /// Forgets batch ids received before `cutoff` (Unix seconds); returns how many.
    func pruneBatchIDs(receivedBefore cutoff: Int64) throws -> Int
    /// How many batch ids are remembered.
    func batchIDCount() throws -> Int
}
