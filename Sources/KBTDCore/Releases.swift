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
    /// the device that sent it (`device.os`). Call it once per batch, after `SourcePolicy.apply`:
    /// a batch comes from one device, so all its keys share one release.
    public mutating func recordRelease(os: String) {
        guard let minor = FieldRules.osMinor(os) else { return }
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
