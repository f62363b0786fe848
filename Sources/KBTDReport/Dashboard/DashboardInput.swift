import KBTDCore

/// Everything the dashboard page is drawn from. Built by the daemon
/// (`GET /dashboard`) or by `kbtd report --html` from the store's bounded
/// `DashboardData`; `DashboardPage.render` turns it into HTML without any I/O.
public struct DashboardInput {
    /// What the page draws for `filter`, already reduced (see `DashboardData`).
    public var data: DashboardData
    public var hourly: [HourlyIngest]
    /// nil when no daemon answered queries (the offline report).
    public var answersByBasis: BasisCounts?
    public var filter: DashboardFilter
    public var minSamples: Int64
    /// Unix seconds at which the page was made.
    public var generatedAt: Int64
    /// Whether the page is served live (the filter form submits to `/dashboard`) or written to a file.
    public var live: Bool
    /// The estimate `GET /v1/height` serves for a question.
    public var estimate: (HeightQuery) -> HeightEstimate
    /// A model's keys with when their height last changed (`HeightEstimator.heightChanges`).
    public var changes: (String) -> [HeightChange]
    /// The screens a model's phones reported, most reports first (`ScreenReports.of`).
    public var screens: (String) -> [ScreenReports]

    public init(data: DashboardData, hourly: [HourlyIngest], answersByBasis: BasisCounts?, filter: DashboardFilter,
                minSamples: Int64, generatedAt: Int64, live: Bool, estimate: @escaping (HeightQuery) -> HeightEstimate,
                changes: @escaping (String) -> [HeightChange] = { _ in [] },
                screens: @escaping (String) -> [ScreenReports] = { _ in [] }) {
        self.data = data
        self.hourly = hourly
        self.answersByBasis = answersByBasis
        self.filter = filter
        self.minSamples = minSamples
        self.generatedAt = generatedAt
        self.live = live
        self.estimate = estimate
        self.changes = changes
        self.screens = screens
    }

    /// From counts in memory (tests, the page benchmark): reduces them with `DashboardData(counts:filter:minSamples:)`.
    public init(counts: AggregateDelta, hourly: [HourlyIngest], answersByBasis: BasisCounts?, filter: DashboardFilter,
                minSamples: Int64, generatedAt: Int64, live: Bool, estimate: @escaping (HeightQuery) -> HeightEstimate,
                changes: @escaping (String) -> [HeightChange] = { _ in [] },
                screens: @escaping (String) -> [ScreenReports] = { _ in [] }) {
        self.init(data: DashboardData(counts: counts, filter: filter, minSamples: minSamples), hourly: hourly,
                  answersByBasis: answersByBasis, filter: filter, minSamples: minSamples, generatedAt: generatedAt, live: live,
                  estimate: estimate, changes: changes, screens: screens)
    }
}
