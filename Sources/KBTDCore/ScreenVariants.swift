/// Screen variants (docs/fallback-chain.md, "Screen variants"): one model's phones can render
/// different screens in points (Display Zoom's Larger Text turns a 390x844 phone into 320x693),
/// and their keyboards have other heights in points. Each exact key keeps its docked samples,
/// votes and sources per reported screen, as it does per OS release; the estimator answers a
/// question's `screen=` from that screen's own data only where it has a level's support and its
/// height differs from the key's.

/// One height bin of one key on one reported screen (`device.screen`).
public struct ScreenBin: Hashable, Sendable, Comparable {
    public var series: SeriesKey
    public var screen: ScreenSize
    public var halfPoints: Int

    public init(series: SeriesKey, screen: ScreenSize, halfPoints: Int) {
        self.series = series
        self.screen = screen
        self.halfPoints = halfPoints
    }

    public static func < (a: Self, b: Self) -> Bool {
        (a.series, a.screen, a.halfPoints) < (b.series, b.screen, b.halfPoints)
    }
}

/// One key on one reported screen: what a screen variant's own sources are counted for.
public struct ScreenVariantKey: Hashable, Sendable, Comparable {
    public var series: SeriesKey
    public var screen: ScreenSize

    public init(series: SeriesKey, screen: ScreenSize) {
        self.series = series
        self.screen = screen
    }

    public static func < (a: Self, b: Self) -> Bool { (a.series, a.screen) < (b.series, b.screen) }
}

extension AggregateDelta {
    /// Tags this batch's docked heights and (already weighed) votes with the screen of the device
    /// that sent it, and its keys' sources with the screen too (`screenSources`). Call it once per
    /// batch, after `SourcePolicy.apply`, as `recordRelease(os:)`: a batch comes from one device,
    /// so all its keys share one screen. A batch without `device.screen` adds no variant.
    public mutating func recordScreen(_ screen: ScreenSize?) {
        guard let screen else { return }
        for (series, ids) in sources where !ids.isEmpty {
            screenSources[ScreenVariantKey(series: series, screen: screen), default: []].formUnion(ids)
        }
        for (key, count) in heights where key.placement == .docked {
            screenCounts[ScreenBin(series: key.series, screen: screen, halfPoints: key.halfPoints),
                         default: .zero].samples += count
        }
        for (key, count) in votes {
            screenCounts[ScreenBin(series: key.series, screen: screen, halfPoints: key.halfPoints),
                         default: .zero].votes += count
        }
    }
}

/// What ranks one screen of a key against its others when the key holds more than it keeps
/// (`HeightIndex.screensToDrop`): its support and its docked samples.
public struct ScreenStanding: Sendable, Equatable {
    public var screen: ScreenSize
    public var support: ReleaseSupport
    public var samples: Int64

    public init(screen: ScreenSize, support: ReleaseSupport, samples: Int64) {
        self.screen = screen
        self.support = support
        self.samples = samples
    }
}

extension HeightIndex {
    /// Screens kept per key, in the index and in the stores. A phone model renders one screen at
    /// standard zoom and one zoomed; a client spraying screens must not grow a key, its rows or
    /// its answers without bound. Past it the key's weakest screens go (`screensToDrop`): a screen
    /// with support of its own outlasts any number of one network's. A dropped screen's samples
    /// still count for the key, as every screen's do.
    public static let maxScreensPerKey = 4

    /// The screens of one key to drop so that at most `maxScreensPerKey` remain: the weakest, by
    /// support, then docked samples, then the smaller screen. The one rule the index and both
    /// stores apply after adding a commit's (or a load's) screens (as `releasesToDrop` for releases).
    public static func screensToDrop(_ held: [ScreenStanding]) -> [ScreenSize] {
        guard held.count > maxScreensPerKey else { return [] }
        return held.sorted { ($0.support.strength, $0.samples, $0.screen) < ($1.support.strength, $1.samples, $1.screen) }
            .prefix(held.count - maxScreensPerKey).map(\.screen)
    }
}
