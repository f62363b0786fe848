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

/// One change to the day's vote ledger: what a batch's weighed votes add, and
/// what the store persists so a restart (or another node) starts from the same ledger.
public struct LedgerIncrement: Sendable, Equatable {
    public var source: SourceID
    /// The source's network group (an IPv4 /16 or an IPv6 /48), hashed as sources are.
    public var group: SourceID
    /// The key's fingerprint (`SeriesKey.fingerprint`) and the height bin.
    public var key: UInt64
    public var halfPoints: Int
    public var votes: Int64
    /// The entry was opened in the ledger's reserve (see `SourcePolicy`).
    public var reserve: Bool

    public init(source: SourceID, group: SourceID, key: UInt64, halfPoints: Int, votes: Int64, reserve: Bool) {
        self.source = source
        self.group = group
        self.key = key
        self.halfPoints = halfPoints
        self.votes = votes
        self.reserve = reserve
    }
}

/// What a day's abuse budgets have spent, as the store keeps it: the vote ledger's
/// entries and the new keys each untrusted network created. Loaded at start-up so
/// a restart forgets nothing of the day (`SourcePolicy.restore`, `KeyAdmission.restore`).
public struct SourceLedger: Sendable, Equatable {
    public var day: Int64
    public var votes: [LedgerIncrement]
    public var newKeys: [SourceID: Int]

    public init(day: Int64, votes: [LedgerIncrement] = [], newKeys: [SourceID: Int] = [:]) {
        self.day = day
        self.votes = votes
        self.newKeys = newKeys
    }
}

extension AggregateDelta {
    /// Replaces every source but `trusted` by a fresh retired identifier (`kbtd migrate` from a
    /// database whose sources are unkeyed address hashes): each key, release and screen keeps its count of sources.
    public mutating func retireSources() {
        for (key, ids) in sources {
            sources[key] = Set(ids.map { $0 == .trusted ? $0 : .retired() })
        }
        for (key, ids) in releaseSources {
            releaseSources[key] = Set(ids.map { $0 == .trusted ? $0 : .retired() })
        }
        for (key, ids) in screenSources {
            screenSources[key] = Set(ids.map { $0 == .trusted ? $0 : .retired() })
        }
        // A day's network hashes are dropped, not retired: a retired identifier is fresh on every
        // row, so it would count one network once per day (the trusted peer stays).
        for (key, ids) in daySources {
            daySources[key] = ids.contains(.trusted) ? [.trusted] : nil
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
/// - A vote for a height no keyboard can have carries no weight: taller than
///   `maxPlausibleHeight`, or than `plausibleScreenShare` of the reporting device's
///   screen side in that orientation (`device.screen`, when the batch names it).
///
/// The ledger of votes granted today is bounded without ever being cleared
/// early, and in a way a few hundred networks cannot use to silence the rest:
///
/// - each source may open at most `maxEntriesPerSource` (key, bin) entries a day;
/// - the open region holds `maxTracked` entries a day, of which one network
///   group (IPv4 /16, IPv6 /48) may take at most `maxEntriesPerGroup`;
/// - past either of those, a source that has opened fewer than
///   `smallSourceEntries` entries today (every honest phone network: a phone
///   reports its own model in a few languages and bins) may still open entries in
///   a reserve of `maxTracked / 2`, of which one group may take `maxReservePerGroup`.
///
/// Past its budgets a source's further votes on new entries carry no weight until
/// the next UTC day, and it cannot vote again on a bin it already used: the caps it
/// spent stay spent. Filling the open region takes 16 groups; filling the reserve as
/// well takes `maxTracked / 2 / maxReservePerGroup` groups (256 at the defaults) and
/// `maxTracked / 2 / smallSourceEntries` networks (3,907 at the defaults).
public struct SourcePolicy: Sendable {
    public var maxVotesPerSource: Int64
    /// (key, bin) entries one source may open per day.
    public var maxEntriesPerSource = 20_000
    /// Entries the ledger's open region holds per day across all sources (the reserve is half as many again).
    public var maxTracked = 500_000
    /// Sources that opened fewer entries than this today may use the reserve.
    public static let smallSourceEntries = 64
    /// The tallest docked keyboard any device reports is about 470 pt (a 13-inch iPad in
    /// landscape with its candidate bar); votes above this carry no weight.
    public static let maxPlausibleHeight = 720.0
    /// A keyboard covers less than this share of the screen side it stands on (a first-generation
    /// iPhone SE in landscape, 320 pt, with a CJK candidate bar comes closest, at about 0.78).
    public static let plausibleScreenShare = 0.85

    /// Votes already granted today: (source, key, bin) → votes.
    private var granted: [VoteKey: Int64] = [:]
    /// Entries each source opened today.
    private var entriesBySource: [SourceID: Int] = [:]
    /// Entries each group opened today in the open region, and in the reserve.
    private var openByGroup: [SourceID: Int] = [:]
    private var reserveByGroup: [SourceID: Int] = [:]
    private var openEntries = 0
    private var reserveEntries = 0
    public private(set) var day: Int64 = -1
    /// Votes refused today because a budget was spent (for metrics).
    public private(set) var refusedVotes: Int64 = 0
    /// Votes refused today for a height no keyboard has (for metrics).
    public private(set) var implausibleVotes: Int64 = 0

    /// Keys are fingerprints, so an entry costs a few dozen bytes whatever the key's strings.
    struct VoteKey: Hashable {
        var source: SourceID
        var key: UInt64
        var halfPoints: Int
    }

    public init(maxVotesPerSource: Int64 = 5) {
        self.maxVotesPerSource = maxVotesPerSource
    }

    /// One group's share of the open region.
    public var maxEntriesPerGroup: Int { max(maxEntriesPerSource, maxTracked / 16) }
    /// The reserve's size, and one group's share of it.
    public var maxReserve: Int { maxTracked / 2 }
    public var maxReservePerGroup: Int { max(Self.smallSourceEntries, maxReserve / 256) }

    /// Entries in today's ledger.
    public var trackedEntries: Int { granted.count }

    /// The UTC day of `now` (Unix seconds).
    public static func day(of now: Double) -> Int64 { Int64((now / 86_400).rounded(.down)) }

    /// Whether a docked height of `halfPoints` can be a keyboard on a device with `screen`
    /// (portrait points) in `orientation`.
    public static func plausible(halfPoints: Int, orientation: Orientation, screen: ScreenSize?) -> Bool {
        let points = HeightBin.points(halfPoints)
        guard points <= maxPlausibleHeight else { return false }
        guard let screen else { return true }
        // `device.screen` is the portrait size; take the sides by length, whatever order a client sent.
        let side = Double(orientation == .landscape ? min(screen.width, screen.height) : max(screen.width, screen.height))
        return points <= side * plausibleScreenShare
    }

    /// Starts today's ledger over from what the store kept (start-up): `increments` are
    /// today's persisted rows, each (source, key, bin) once with its votes so far.
    public mutating func restore(day: Int64, _ increments: [LedgerIncrement]) {
        start(day: day)
        for row in increments {
            let voteKey = VoteKey(source: row.source, key: row.key, halfPoints: row.halfPoints)
            if granted[voteKey] == nil { open(source: row.source, group: row.group, reserve: row.reserve) }
            granted[voteKey, default: 0] += row.votes
        }
    }

    /// Adds another node's spending of the same day (its commit, read from the shared
    /// database): the same budgets then hold across every node of a cluster. Rows of an
    /// earlier day are ignored; a later day starts the ledger over first.
    public mutating func absorb(_ ledger: SourceLedger) {
        guard ledger.day >= day else { return }
        if ledger.day > day { start(day: ledger.day) }
        for row in ledger.votes {
            let voteKey = VoteKey(source: row.source, key: row.key, halfPoints: row.halfPoints)
            if granted[voteKey] == nil { open(source: row.source, group: row.group, reserve: row.reserve) }
            granted[voteKey, default: 0] += row.votes
        }
    }

    private mutating func start(day: Int64) {
        granted = [:]
        entriesBySource = [:]
        openByGroup = [:]
        reserveByGroup = [:]
        openEntries = 0
        reserveEntries = 0
        refusedVotes = 0
        implausibleVotes = 0
        self.day = day
    }

    private mutating func open(source: SourceID, group: SourceID, reserve: Bool) {
        entriesBySource[source, default: 0] += 1
        if reserve {
            reserveByGroup[group, default: 0] += 1
            reserveEntries += 1
        } else {
            openByGroup[group, default: 0] += 1
            openEntries += 1
        }
    }

    /// Where a new entry of `source` goes: the open region, the reserve, or nowhere (nil).
    private func room(source: SourceID, group: SourceID) -> Bool? {
        let opened = entriesBySource[source, default: 0]
        guard opened < maxEntriesPerSource else { return nil }
        if openEntries < maxTracked, openByGroup[group, default: 0] < maxEntriesPerGroup { return false }
        if opened < Self.smallSourceEntries, reserveEntries < maxReserve, reserveByGroup[group, default: 0] < maxReservePerGroup {
            return true
        }
        return nil
    }

    /// Rewrites a batch's delta for an untrusted `source` (in network `group`): caps its
    /// votes by what the source has left today, drops votes for implausible heights
    /// (`screen`: the batch's `device.screen`), and attributes its keys to the source.
    /// Returns what the ledger gained, for the store to persist. `now` is Unix seconds.
    @discardableResult
    public mutating func apply(to delta: inout AggregateDelta, source: SourceID, group: SourceID? = nil,
                               screen: ScreenSize? = nil, now: Double) -> [LedgerIncrement] {
        guard source != .trusted else { return [] }
        let group = group ?? source
        let today = Self.day(of: now)
        if today != day { start(day: today) }
        var capped: [SeriesBin: Int64] = [:]
        var increments: [LedgerIncrement] = []
        // In a stable order, so which entries fit a nearly spent budget does not depend on hashing;
        // each key's fingerprint (a hash of its strings) is computed once, not in every comparison.
        let ordered = delta.votes.map { (fingerprint: $0.key.series.fingerprint, key: $0.key, count: $0.value) }
            .sorted { ($0.fingerprint, $0.key.halfPoints) < ($1.fingerprint, $1.key.halfPoints) }
        for (fingerprint, key, count) in ordered {
            guard Self.plausible(halfPoints: key.halfPoints, orientation: key.series.orientation, screen: screen) else {
                implausibleVotes += count
                continue
            }
            let voteKey = VoteKey(source: source, key: fingerprint, halfPoints: key.halfPoints)
            let used: Int64
            var reserve = false
            if let existing = granted[voteKey] {
                used = existing
            } else {
                guard maxVotesPerSource > 0, let inReserve = room(source: source, group: group) else {
                    refusedVotes += count
                    continue
                }
                open(source: source, group: group, reserve: inReserve)
                reserve = inReserve
                used = 0
            }
            let allowed = max(0, min(count, maxVotesPerSource - used))
            if allowed > 0 {
                granted[voteKey] = used + allowed
                capped[key] = allowed
                increments.append(LedgerIncrement(source: source, group: group, key: voteKey.key, halfPoints: key.halfPoints,
                                                  votes: allowed, reserve: reserve))
            }
        }
        delta.votes = capped
        for key in delta.sources.keys { delta.sources[key] = [source] }
        return increments
    }
}
