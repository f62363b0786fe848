/// Who sent a batch, as far as the estimator cares: a client network
/// (IPv4 address or IPv6 /64), stored only as a keyed hash, or `trusted`
/// (the Unix socket and, by default, loopback: the operator's own tools).
///
/// Values in the store (`key_sources.source`, a signed 64-bit integer):
/// 0 is `trusted`; a positive value is a network's keyed hash (SipHash-2-4
/// under the daemon's `SourceKey`, top bit cleared), kept `source_retention_days`
/// after the network last reported the key; a negative value is a retired
/// source: a random identifier that replaced an expired (or, at migration,
/// an unkeyed) hash, so the key keeps its count of distinct sources while
/// nothing derived from an address remains.
public struct SourceID: Hashable, Sendable, Comparable {
    public var value: UInt64

    public init(_ value: UInt64) { self.value = value }

    /// Trusted peers: a batch from them counts in full and satisfies `min_sources` alone.
    public static let trusted = SourceID(0)

    /// A client network's identifier: SipHash-2-4 of the network key
    /// (`ClientNetwork`: `203.0.113.7`, `2001:db8:0:1::/64`) under `key`, in
    /// 1...Int64.max so it is never `trusted` and never reads as retired.
    public init(network: String, key: SourceKey) {
        let hash = SipHash.hash(Array(network.utf8), k0: key.k0, k1: key.k1) & UInt64(Int64.max)
        value = hash == 0 ? 1 : hash
    }

    /// Whether this identifier was derived from an address (a keyed hash):
    /// neither trusted nor retired.
    public var isNetworkHash: Bool { value != 0 && value <= UInt64(Int64.max) }

    /// A fresh retired identifier: random, negative as a signed integer, odd.
    public static func retired() -> SourceID {
        SourceID(UInt64(bitPattern: -(Int64.random(in: 1...Int64.max) | 1)))
    }

    public static func < (a: SourceID, b: SourceID) -> Bool { a.value < b.value }
}

extension AggregateDelta {
    /// Replaces every source but `trusted` by a fresh retired identifier (`kbtd migrate` from a
    /// database whose sources are unkeyed address hashes): each key keeps its count of sources.
    public mutating func retireSources() {
        for (key, ids) in sources {
            sources[key] = Set(ids.map { $0 == .trusted ? $0 : .retired() })
        }
    }
}

/// The defence against poisoning: one client must not move a served height alone.
///
/// - Each untrusted source may add at most `maxVotesPerSource` docked samples
///   per (key, height bin) per day to what the estimator weighs (the mode is a
///   vote of sources, not of samples); the rest are stored and counted but carry no weight.
/// - A level of the fallback chain answers only when `minSources` distinct
///   sources (or a trusted one) reported its key.
///
/// The ledger of votes granted today is bounded without ever being cleared
/// early: each source may open at most `maxEntriesPerSource` (key, bin)
/// entries a day and the whole ledger at most `maxTracked`; past either, that
/// source's further votes on new entries carry no weight until the next UTC
/// day. An attacker who fills the ledger therefore only silences itself (and,
/// once the whole ledger is full, other newcomers), and cannot vote again on a
/// bin it already used: the caps it spent stay spent.
public struct SourcePolicy: Sendable {
    public var maxVotesPerSource: Int64
    /// (key, bin) entries one source may open per day.
    public var maxEntriesPerSource = 20_000
    /// Entries the ledger holds per day across all sources.
    public var maxTracked = 500_000
    /// Votes already granted today: (source, key, bin) → votes.
    private var granted: [VoteKey: Int64] = [:]
    /// Entries each source opened today.
    private var entriesBySource: [SourceID: Int] = [:]
    private var day: Int64 = -1
    /// Votes refused today because a budget was spent (for metrics).
    public private(set) var refusedVotes: Int64 = 0

    /// Keys are fingerprints, so an entry costs a few dozen bytes whatever the key's strings.
    struct VoteKey: Hashable {
        var source: SourceID
        var key: UInt64
        var halfPoints: Int
    }

    public init(maxVotesPerSource: Int64 = 5) {
        self.maxVotesPerSource = maxVotesPerSource
    }

    /// Entries in today's ledger.
    public var trackedEntries: Int { granted.count }

    /// Rewrites a batch's delta for an untrusted `source`: caps its votes by
    /// what the source has left today and attributes its keys to the source.
    /// `now` is Unix seconds.
    public mutating func apply(to delta: inout AggregateDelta, source: SourceID, now: Double) {
        guard source != .trusted else { return }
        let today = Int64((now / 86_400).rounded(.down))
        if today != day {
            granted = [:]
            entriesBySource = [:]
            day = today
        }
        var capped: [SeriesBin: Int64] = [:]
        for (key, count) in delta.votes {
            let voteKey = VoteKey(source: source, key: key.series.fingerprint, halfPoints: key.halfPoints)
            let used: Int64
            if let existing = granted[voteKey] {
                used = existing
            } else {
                let opened = entriesBySource[source, default: 0]
                guard opened < maxEntriesPerSource, granted.count < maxTracked else {
                    refusedVotes += count
                    continue
                }
                entriesBySource[source] = opened + 1
                used = 0
            }
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
