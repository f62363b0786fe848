import KBTDCore

/// Reading a store back, the same on SQLite and PostgreSQL: what `kbtd stats`,
/// `kbtd height`, `/v1/stats` and the dashboard need.
///
/// Async end to end: PostgreSQL's store awaits postgres-nio; SQLite's answers
/// synchronously (its methods witness these), so a caller that may hold an
/// SQLite store awaits it from a task that prefers `StoreThreads` (the writer's
/// thread, `StoreThreads.readers`), never on the cooperative pool.
public protocol TelemetryReader: AnyObject {
    /// Every count in the store, read as one delta from empty.
    func loadCounts() async throws -> AggregateDelta
    /// The counts of admitted keys only: what the in-memory index starts from.
    func loadIndexCounts() async throws -> AggregateDelta
    /// Keys and samples matching `filter`, without reading any histogram.
    func statsTotals(_ filter: StatsFilter) async throws -> (keys: Int64, samples: Int64)
    /// The counts of the keys matching `filter` in key order, a page of keys at
    /// a time; returns the last key read when keys remain (a cursor), else nil.
    func forEachPage(_ filter: StatsFilter, after cursor: SeriesKey?, pageSize: Int, maxKeys: Int,
                     _ body: (AggregateDelta) throws -> Void) async throws -> SeriesKey?
    /// Batches and samples stored per hour from `since` (Unix seconds) on, oldest first.
    func hourlyIngest(since: Int64) async throws -> [HourlyIngest]
    /// What the dashboard draws for `filter`, aggregated and cut to its limits in the
    /// database (`GROUP BY`, `ORDER BY ... LIMIT`): equal to
    /// `DashboardData(counts: loadCounts(), filter:, minSamples:)` without reading every count.
    func dashboardData(_ filter: DashboardFilter, minSamples: Int64) async throws -> DashboardData
}

extension CommitResult {
    /// For stores outside this module (PostgreSQL); the memberwise initializer is internal.
    public static func of(stored: [Bool], added: AggregateDelta, admitted: Int) -> CommitResult {
        CommitResult(stored: stored, added: added, admitted: admitted)
    }
}
