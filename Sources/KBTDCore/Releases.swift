/// One height bin of one key on one OS release (major.minor): the release
/// dimension the estimator uses when a point release moved keyboards
/// (docs/fallback-chain.md, "Point releases"). Only the docked height bins
/// carry it: every other count stays per OS major.
public struct ReleaseBin: Hashable, Sendable, Comparable {
    public var series: SeriesKey
    /// The release's minor (`2` for `26.2`; `0` for `26` and `26.0`).
    public var minor: Int
    public var halfPoints: Int

    public init(series: SeriesKey, minor: Int, halfPoints: Int) {
        self.series = series
        self.minor = minor
        self.halfPoints = halfPoints
    }

    public static func < (a: Self, b: Self) -> Bool {
        (a.series, a.minor, a.halfPoints) < (b.series, b.minor, b.halfPoints)
    }
}

/// Docked samples (true totals) and estimator votes (capped per source, as
/// `AggregateDelta.votes`) of one `ReleaseBin`.
public struct ReleaseCount: Sendable, Equatable {
    public var samples: Int64
    public var votes: Int64

    public init(samples: Int64, votes: Int64) {
        self.samples = samples
        self.votes = votes
    }

    /// No samples and no votes: the start of a sum (`counts[bin, default: .zero] += count`).
    public static let zero = ReleaseCount(samples: 0, votes: 0)

    public static func + (a: Self, b: Self) -> Self {
        ReleaseCount(samples: a.samples + b.samples, votes: a.votes + b.votes)
    }

    public static func += (a: inout Self, b: Self) {
        a = a + b
    }
}

/// One key on one OS release (major.minor): what a release's own sources are counted for.
public struct ReleaseKey: Hashable, Sendable, Comparable {
    public var series: SeriesKey
    public var minor: Int

    public init(series: SeriesKey, minor: Int) {
        self.series = series
        self.minor = minor
    }

    public static func < (a: Self, b: Self) -> Bool { (a.series, a.minor) < (b.series, b.minor) }
}

/// The sources behind one key on one release, as the index keeps them: how many distinct
/// sources the store holds for it (`release_sources`, at most `LevelStats.sourceLimit`, as
/// `key_sources` per key) and whether one is a trusted peer. Two bytes, held in the padding
/// of the pooled 40-byte release entry (`ReleaseEntry`), so the release dimension costs no
/// more memory. A release answers on its own only with `min_sources` here (or a trusted
/// peer), not on the key's sources (docs/fallback-chain.md, "Point releases").
public struct ReleaseSupport: Sendable, Equatable {
    public private(set) var sources: UInt8 = 0
    public private(set) var trusted = false

    public init() {}

    public init(sources: Int, trusted: Bool) {
        self.sources = UInt8(clamping: min(sources, LevelStats.sourceLimit))
        self.trusted = trusted
    }

    /// Adds sources new to this (key, release): each must be counted once (see `HeightIndex.apply`).
    public mutating func add(_ new: Set<SourceID>) {
        sources = UInt8(min(LevelStats.sourceLimit, Int(sources) + new.count))
        if new.contains(.trusted) { trusted = true }
    }

    /// The support of a set of new sources (`add` on an empty one).
    static func counting(_ sources: Set<SourceID>) -> ReleaseSupport {
        var support = ReleaseSupport()
        if !sources.isEmpty { support.add(sources) }
        return support
    }

    /// An order of support: a trusted peer above any number of networks, then more networks.
    var strength: Int { trusted ? Int(UInt8.max) + 1 : Int(sources) }

    /// At least `minimum` distinct sources, or a trusted one (the rule `min_sources` applies to a level).
    public func satisfies(_ minimum: Int) -> Bool { trusted || Int(sources) >= minimum }

    /// The weaker-bound union of several releases' support: the most sources any one has (the
    /// distinct sources across them are at least that many), trusted if any is.
    public static func union(_ supports: some Sequence<ReleaseSupport>) -> ReleaseSupport {
        var union = ReleaseSupport()
        for support in supports {
            union.sources = max(union.sources, support.sources)
            union.trusted = union.trusted || support.trusted
        }
        return union
    }
}

extension FieldRules {
    /// The minor version of a dotted OS version (`1` for `26.1`, `0` for `26`), or nil when
    /// `osMajor` would refuse the string.
    public static func osMinor(_ os: String) -> Int? {
        guard osMajor(os) != nil else { return nil }
        let parts = os.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count > 1 ? Int(parts[1]) : 0
    }
}

extension AggregateDelta {
    /// Tags this batch's docked heights and (already weighed) votes with the release of
    /// the device that sent it (`device.os`), and its keys' sources with the release too
    /// (`releaseSources`). Call it once per batch, after `SourcePolicy.apply` (which names
    /// the batch's source): a batch comes from one device, so all its keys share one release.
    public mutating func recordRelease(os: String) {
        guard let minor = FieldRules.osMinor(os) else { return }
        for (series, ids) in sources where !ids.isEmpty {
            releaseSources[ReleaseKey(series: series, minor: minor), default: []].formUnion(ids)
        }
        for (key, count) in heights where key.placement == .docked {
            releases[ReleaseBin(series: key.series, minor: minor, halfPoints: key.halfPoints),
                     default: .zero].samples += count
        }
        for (key, count) in votes {
            releases[ReleaseBin(series: key.series, minor: minor, halfPoints: key.halfPoints),
                     default: .zero].votes += count
        }
    }
}

/// What ranks one release of a key against its others when the key holds more than it keeps
/// (`HeightIndex.releasesToDrop`): its support and its docked samples.
public struct ReleaseStanding: Sendable, Equatable {
    public var minor: Int
    public var support: ReleaseSupport
    public var samples: Int64

    public init(minor: Int, support: ReleaseSupport, samples: Int64) {
        self.minor = minor
        self.support = support
        self.samples = samples
    }
}
