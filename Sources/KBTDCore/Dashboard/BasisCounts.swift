/// Served height answers per basis, counted by a running daemon since it started.
public struct BasisCounts: Sendable, Equatable {
    /// `GET /v1/height` answers (200 and 304).
    public var counts: [EstimateBasis: Int64]
    /// Estimates inside `GET /v1/heights` answers (what the client library fetches), one per entry.
    public var modelEstimates: [EstimateBasis: Int64]
    /// Unix seconds of the daemon's start.
    public var since: Int64

    public init(counts: [EstimateBasis: Int64], modelEstimates: [EstimateBasis: Int64] = [:], since: Int64) {
        self.counts = counts
        self.modelEstimates = modelEstimates
        self.since = since
    }
}
