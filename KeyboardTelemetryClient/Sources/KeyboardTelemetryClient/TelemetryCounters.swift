/// What one client has done since it was created. Everything a phone would
/// want to report about its own telemetry: how much it recorded, what kbtd
/// acknowledged, and what it had to give up on.
public struct TelemetryCounters: Sendable, Equatable, CustomStringConvertible {
    /// Samples passed to `record`, including discarded ones.
    public var samplesRecorded = 0
    /// Samples refused locally because a number was not finite (JSON cannot carry NaN or infinity).
    public var samplesDiscarded = 0
    /// Batches written to the on-disk queue.
    public var batchesQueued = 0

    /// Batches kbtd stored and answered 202 for.
    public var batchesAcknowledged = 0
    /// The sum of `accepted` over those 202 receipts.
    public var samplesAccepted = 0
    /// The sum of `rejected` over those 202 receipts (invalid samples kbtd refused one by one).
    public var samplesRejected = 0
    /// Batches kbtd answered 200 `duplicate` for: a retry of a batch it had stored, whose first answer was lost.
    public var batchesDuplicate = 0

    /// Batches dropped after a final 4xx answer (other than 429).
    public var batchesDropped = 0
    /// Samples in those batches.
    public var samplesDropped = 0
    /// Batches dropped, oldest first, because the on-disk queue was over its cap.
    public var batchesEvicted = 0
    /// Samples in those batches.
    public var samplesEvicted = 0
    /// Samples older than `maxSampleAge` (kbtd would refuse them), dropped instead of sent: when
    /// their batch was sealed, or with their batch when it had waited in the queue past the limit.
    public var samplesExpired = 0
    /// Queued batches dropped unsent because their newest sample had grown older than `maxSampleAge`.
    public var batchesExpired = 0

    /// Send attempts that will be retried: network errors, 429, 5xx.
    public var failedAttempts = 0
    /// Attempts answered 429 or 503 with a `Retry-After` the client waited for.
    public var retryAfterWaits = 0

    /// `GET /v1/heights` answered 200 with new estimates.
    public var heightsFetched = 0
    /// `GET /v1/heights` answered 304 (the cached estimates are current).
    public var heightsNotModified = 0
    /// `GET /v1/heights` failed (network error or unexpected status).
    public var heightsFailed = 0

    /// All zero.
    public init() {}

    public var description: String {
        "recorded \(samplesRecorded) (discarded \(samplesDiscarded)), queued \(batchesQueued) batches; "
            + "acknowledged \(batchesAcknowledged) batches (\(samplesAccepted) accepted, \(samplesRejected) rejected), "
            + "\(batchesDuplicate) duplicates; dropped \(batchesDropped) (\(samplesDropped) samples), "
            + "evicted \(batchesEvicted) (\(samplesEvicted) samples); expired \(samplesExpired) samples; "
            + "\(failedAttempts) failed attempts"
    }
}
