/// Batches and samples stored in one UTC hour (the store's `hourly_ingest` table).
public struct HourlyIngest: Sendable, Equatable {
    /// Unix seconds of the hour's start.
    public var hour: Int64
    public var batches: Int64
    public var samples: Int64
    public var rejected: Int64

    public init(hour: Int64, batches: Int64, samples: Int64, rejected: Int64) {
        self.hour = hour
        self.batches = batches
        self.samples = samples
        self.rejected = rejected
    }
}
