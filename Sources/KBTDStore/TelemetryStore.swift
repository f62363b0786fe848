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
    /// Who sent it: a trusted peer's keys answer at once, an untrusted network's
    /// only once `min_sources` networks reported them.
    public var source: SourceID = .trusted
    /// What this batch added to the day's vote ledger (`SourcePolicy.apply`), and the new keys
    /// its untrusted source created (`KeyAdmission`): persisted with the batch, so a restart
    /// or another node starts the day from the same budgets.
    public var ledger: [LedgerIncrement] = []
    public var newKeys = 0

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
/// batch id, counted nothing), and what the in-memory index must add.
public struct CommitResult: Sendable {
    public var stored: [Bool]
    /// Counts for the index: the commit's counts of keys already admitted, plus
    /// every stored count of keys this commit admitted. Unconfirmed keys' counts
    /// are stored (and shown by `kbtd stats`) but stay out of memory.
    public var added: AggregateDelta
    /// Keys this commit admitted to the index.
    public var admitted: Int = 0
    /// Keys this commit displaced from a full index (stored still, no longer
    /// admitted): the in-memory index must drop them.
    public var evicted: [SeriesKey] = []
}

/// Durable storage of aggregates and seen batch ids (SQLite, or PostgreSQL for
/// several stateless nodes): what a `TelemetryReader` reads, and the writes.
/// One writer uses an instance from one task at a time (the writer's, on its
/// own thread); implementations need not be thread-safe. Async as `TelemetryReader`. (GRDB's `DatabaseWriter`, which refines `DatabaseReader`, is the model.)
public protocol TelemetryStore: TelemetryReader {
    /// Stores all `batches` in one durable transaction, or none of them (throws):
    /// claims the ids of a `CommitPlan`, settles it and applies it.
    func commit(_ batches: [PendingBatch]) async throws -> CommitResult
    /// Calls `body` with every stored key (admitted or not).
    func forEachKey(_ body: (SeriesKey) -> Void) async throws
    /// Deletes keys never admitted and first seen before `cutoff` (Unix
    /// seconds) with all their counts, at most `limit` a call; returns them.
    func pruneUnconfirmedKeys(firstSeenBefore cutoff: Int64, limit: Int) async throws -> [SeriesKey]
    /// Retires the client networks' keyed hashes last seen before `cutoff` (Unix
    /// seconds): each becomes a random identifier, so its key keeps its count of
    /// sources while nothing derived from an address stays; returns how many of the keys'
    /// (`key_sources`; the releases' `release_sources` and the screens' `screen_sources` retire by the same rule).
    func retireSources(seenBefore cutoff: Int64) async throws -> Int
    /// Deletes keys without trusted data that no commit reported since
    /// `cutoff` (`last_seen`, Unix seconds), admitted or not, with all their
    /// counts, at most `limit` a call; returns them (the index must drop them).
    func pruneIdleKeys(lastSeenBefore cutoff: Int64, limit: Int) async throws -> [SeriesKey]
    /// The abuse budgets spent on UTC day `day` (the vote ledger and new-key quotas).
    func loadLedger(day: Int64) async throws -> SourceLedger
    /// Forgets batch ids received before `cutoff` (Unix seconds); returns how many.
    func pruneBatchIDs(receivedBefore cutoff: Int64) async throws -> Int
    /// How many batch ids are remembered.
    func batchIDCount() async throws -> Int
}

/// A store with a write-ahead log of its own to keep small (SQLite; PostgreSQL
/// manages its own): the writer checkpoints it after commits and when idle.
public protocol WALCheckpointing: AnyObject {
    /// Bytes in the write-ahead log; runs a truncating checkpoint first when it grew past `limit`.
    func checkpointIfLarge(limit: Int64) -> Int64
}

extension SourceLedger {
    /// What a commit's new untrusted batches spent of their sources' daily budgets, one ledger
    /// per UTC day in day order (a day whose batches spent nothing still has its, empty): what
    /// each store persists and what a PostgreSQL commit sends the other nodes.
    public static func spent(by batches: [PendingBatch], stored: [Bool]) -> [SourceLedger] {
        var byDay: [Int64: SourceLedger] = [:]
        for (batch, isNew) in zip(batches, stored) where isNew && batch.source != .trusted {
            let day = batch.receivedAt / 86_400
            byDay[day, default: SourceLedger(day: day)].votes += batch.ledger
            if batch.newKeys > 0 { byDay[day, default: SourceLedger(day: day)].newKeys[batch.source, default: 0] += batch.newKeys }
        }
        return byDay.keys.sorted().map { byDay[$0]! }
    }
}
