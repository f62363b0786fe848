import KBTDCore

/// What the page draws: the store's bounded `DashboardData` plus the
/// estimates marked on the panels and the cold-start percentiles. Nothing here
/// grows with the number of keys (the data is already cut to its limits).
struct DashboardSummary {
    /// One histogram panel: a (language, orientation) of the chosen model, keyboard type `default`.
    struct HeightPanel {
        var language: String
        var orientation: Orientation
        /// Docked height bins (half points) and their counts, ascending.
        var bins: [DashboardData.Bin]
        var total: Int64
        var estimate: HeightEstimate
    }

    struct ThinKey {
        var key: SeriesKey
        var docked: Int64
    }

    var models: [String]
    var osMajors: [Int]
    var languages: [String]
    var hiddenModels: Int
    var hiddenOSMajors: Int
    var hiddenLanguages: Int
    /// The model the histograms are drawn for: the filter's, else the one with the most docked samples.
    var chosenModel: String?
    var panels: [HeightPanel] = []
    var hiddenPanels: Int
    var keys: Int
    var samples: Int64
    var cold = CountHistogram()
    var warm = CountHistogram()
    /// The same cold-start counts by log bucket, for drawing.
    var coldBuckets: [Int: Int64]
    var warmBuckets: [Int: Int64]
    var coldStartRows: [DashboardData.ColdStartRow]
    /// The most frequent durations and curves, most first.
    var durations: [DashboardData.ValueCount]
    var curves: [DashboardData.ValueCount]
    /// Every animation sample of the filter (the charts' 100 %).
    var animationTotal: Int64
    var thinKeys: [ThinKey]

    init(_ input: DashboardInput) {
        let data = input.data, filter = input.filter
        models = data.models
        osMajors = data.osMajors
        languages = data.languages
        hiddenModels = data.hiddenModels
        hiddenOSMajors = data.hiddenOSMajors
        hiddenLanguages = data.hiddenLanguages
        keys = data.keys
        samples = data.samples
        animationTotal = data.samples
        chosenModel = data.chosenModel
        hiddenPanels = data.hiddenPanels
        if let model = data.chosenModel {
            panels = data.panels.map { panel in
                let query = HeightQuery(model: model, language: panel.language, osMajor: filter.osMajor,
                                        orientation: panel.orientation, keyboardType: "default")
                return HeightPanel(language: panel.language, orientation: panel.orientation, bins: panel.bins, total: panel.total,
                                   estimate: input.estimate(query))
            }
        }
        coldBuckets = data.coldBuckets
        warmBuckets = data.warmBuckets
        cold = CountHistogram(data.coldBuckets)
        warm = CountHistogram(data.warmBuckets)
        coldStartRows = data.coldStartRows
        durations = data.durations
        curves = data.curves
        thinKeys = data.thinKeys.map { ThinKey(key: $0.key, docked: $0.count) }
    }
}
