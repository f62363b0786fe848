/// What became of one `POST /v1/batches`: the `outcome` label of `kbtd_batches_total`.
enum BatchOutcome: String, Sendable, CaseIterable {
    /// Committed (202).
    case stored
    /// Its batch id was already stored (200).
    case duplicate
    /// A bad header, body or batch (400, 413, 415).
    case rejected
    /// The write queue is full or the database cannot be written (503).
    case unavailable
    /// The client network's token bucket is empty (429).
    case rateLimited = "rate_limited"
    /// No valid ingest token (401).
    case unauthorized
}
