/// One screen a model's phones reported (`device.screen`) and how many batches reported it: the
/// dashboard's screen table (Display Zoom shows as a second, smaller screen of the same model).
public struct ScreenReports: Sendable, Equatable {
    public var screen: ScreenSize
    public var reports: Int64

    public init(screen: ScreenSize, reports: Int64) {
        self.screen = screen
        self.reports = reports
    }

    /// The model's screens in the index (`ScreenDirectory`, at most its per-model limit), most reports first.
    public static func of(_ model: String, in index: HeightIndex) -> [ScreenReports] {
        (index.screens.countsByModel[model] ?? [:]).map { ScreenReports(screen: $0.key, reports: $0.value) }
            .sorted { ($1.reports, $0.screen) < ($0.reports, $1.screen) }
    }
}
