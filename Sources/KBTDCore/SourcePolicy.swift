/// Who sent a batch, as far as the estimator cares: a client network
/// (IPv4 address or IPv6 /64), stored only as a 64-bit hash, or `trusted`
/// (the Unix socket and, by default, loopback: the operator's own tools).
public struct SourceID: Hashable, Sendable, Comparable {
    public var value: UInt64

    public init(_ value: UInt64) { self.value = value }

    /// Trusted peers: a batch from them counts in full and satisfies `min_sources` alone.
    public static let trusted = SourceID(0)

    /// A non-zero hash of a client network key (FNV-1a, 64 bit).
    public init(network: String) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in network.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        value = hash == 0 ? 1 : hash
    }

    public static func < (a: SourceID, b: SourceID) -> Bool { a.value < b.value }
}

/// The defence against poisoning: one client must not move a served height alone.
///
/// - Each untrusted source may add at most `maxVotesPerSource` docked samples
///   per (key, height bin) per day to what the estimator weighs (the mode is a
///   vote of sources, not of samples); the rest are stored and counted but carry no weight.
/// - A level of the fallback chain answers only when `minSources` distinct
///   sources (or a trusted one) reported its key.
///
/// Together with the per-address rate limit this means a single address
/// posting 100,000 samples of 999 pt adds 5 votes to one bin of one key and
/// cannot make any level answer by itself.
public struct SourcePolicy: Sendable {
    public var maxVotesPerSource: Int64
    /// Votes already granted today: (source, key, bin) → votes.
    private var granted: [VoteKey: Int64] = [:]
    private var day: Int64 = -1
    /// Past this many tracked (source, key, bin) entries the day starts over early (bounded memory).
    public var maxTracked = 1_000_000

    struct VoteKey: Hashable {
        var source: SourceID
        var key: SeriesBin
    }

    public init(maxVotesPerSource: Int64 = 5) {
        self.maxVotesPerSource = maxVotesPerSource
    }

    /// Rewrites a batch's delta for an untrusted `source`: caps its votes by
    /// what the source has left today and attributes its keys to the source.
    /// `now` is Unix seconds.
    public mutating func apply(to delta: inout AggregateDelta, source: SourceID, now: Double) {
        guard source != .trusted else { return }
        let today = Int64(now / 86_400)
        if today != day || granted.count > maxTracked {
            granted = [:]
            day = today
        }
        var capped: [SeriesBin: Int64] = [:]
        for (key, count) in delta.votes {
            let voteKey = VoteKey(source: source, key: key)
            let used = granted[voteKey] ?? 0
            let allowed = max(0, min(count, maxVotesPerSource - used))
            if allowed > 0 {
                granted[voteKey] = used + allowed
                capped[key] = allowed
            }
        }
        delta.votes = capped
        for key in delta.sources.keys { delta.sources[key] = [source] }
    }
}
