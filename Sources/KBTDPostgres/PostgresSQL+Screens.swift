import KBTDCore
import PostgresNIO

extension PostgresSQL {
    /// Docked samples, votes and sources per reported screen (`screen_counts`, `screen_sources`,
    /// schema v13): written, bounded and read as the releases' (`KeyVariantTables`).
    static let screens = KeyVariantTables<ScreenVariantKey>(counts: "screen_counts", sources: "screen_sources",
                                                            column: "screen", type: "text")
}

/// A screen is stored as its text (`320x693`, `ScreenSize.description`).
extension ScreenVariantKey: KeyVariant {
    var column: String { screen.description }

    init?(series: SeriesKey, column: String) {
        guard let screen = ScreenSize(column) else { return nil }
        self.init(series: series, screen: screen)
    }

    static var maxPerKey: Int { HeightIndex.maxScreensPerKey }
    static var bins: WritableKeyPath<AggregateDelta, [ScreenBin: ReleaseCount]> { \.screenCounts }
    static var sources: WritableKeyPath<AggregateDelta, [ScreenVariantKey: Set<SourceID>]> { \.screenSources }

    static func toDrop(_ held: [VariantStanding<ScreenVariantKey>]) -> [ScreenVariantKey] {
        guard let series = held.first?.variant.series else { return [] }
        return HeightIndex.screensToDrop(held.map { ScreenStanding(screen: $0.variant.screen, support: $0.support, samples: $0.samples) })
            .map { ScreenVariantKey(series: series, screen: $0) }
    }
}

extension ScreenBin: VariantBin {
    var variant: ScreenVariantKey { ScreenVariantKey(series: series, screen: screen) }
    init(_ variant: ScreenVariantKey, halfPoints: Int) { self.init(series: variant.series, screen: variant.screen, halfPoints: halfPoints) }
}
