/// The keys in the in-memory index and their support, kept by each store's
/// writer: the one place that decides, without I/O, how a commit's reports
/// move supports (`review`), which confirmed keys enter a full index and which
/// indexed keys they displace (`admit`); the stores write those decisions and
/// then `apply` them here. A key displaces only a weaker one (so keys with
/// trusted data are never displaced by keys without), ties go by `ranksAbove`,
/// and the displaced key stays stored and may come back once it is the stronger.
///
/// 40 bytes a key in its dictionary (strings held once each, by number: a
/// dictionary of whole `SeriesKey`s and supports took 88 bytes a key, 25 MiB
/// at 100,000 keys once its load factor is counted, `Benchmarks/keys`);
/// finding the weakest keys is one pass over them, done only when a candidate
/// beats the weakest support seen (`floor`), so a commit whose candidates
/// cannot get in costs nothing.
public struct IndexedKeys: Sendable {
    public struct Entry: Sendable {
        public var key: SeriesKey
        public var support: KeySupport
    }

    /// One indexed key and its support, its strings by number in `names`.
    fileprivate struct Compact: Sendable {
        var model: UInt32
        var language: UInt32
        var keyboardType: UInt32
        var osMajor: Int32
        var lastSeenDay: Int64
        var sources: UInt8
        var trusted: Bool
        var portrait: Bool
        /// A commit of this store already wrote (or tried to write) the trusted source's row
        /// of the key (`key_sources`) and of its releases 0-31 (`release_sources`, one bit a
        /// minor): in what was padding, so the entry stays 32 bytes (`knowsTrustedRow`).
        var trustedKeyRow = false
        var trustedReleaseRows: UInt32 = 0
    }

    private var entries: [UInt64: Compact] = [:]
    /// Bytes of one entry's value (32: the trusted-row bits sit in what was padding).
    static var entryStride: Int { MemoryLayout<Compact>.stride }
    /// Model, language and keyboard-type strings, each held once.
    private var names = IndexStrings()
    /// At most the weakest support in the index (exact after each scan; supports only grow in between).
    private var floor: KeySupport?

    public init() {}

    public var count: Int { entries.count }

    public func contains(_ fingerprint: UInt64) -> Bool { entries[fingerprint] != nil }

    /// The support of an indexed key (nil: not indexed).
    public subscript(key: SeriesKey) -> KeySupport? { entries[key.fingerprint].map(Self.support) }

    /// Loads an admitted key as its store holds it (`KeySupport(sources:trusted:lastSeen:)`), when the store opens.
    public mutating func load(_ key: SeriesKey, sources: Int, trusted: Bool, lastSeen: Int64) {
        insert(key, support: KeySupport(sources: sources, trusted: trusted, lastSeen: lastSeen))
    }

    /// Adds a key (or replaces its support) without asking for room: `load`, `apply`, and a
    /// PostgreSQL node learning that another node admitted a key.
    public mutating func insert(_ key: SeriesKey, support: KeySupport) {
        entries[key.fingerprint] = compact(key, support)
        if let low = floor, support < low { floor = support }
    }

    @discardableResult
    public mutating func remove(_ key: SeriesKey) -> Bool {
        guard entries.removeValue(forKey: key.fingerprint) != nil else { return false }
        return true
    }

    private mutating func compact(_ key: SeriesKey, _ support: KeySupport) -> Compact {
        // `FieldRules` keeps an OS major to 4 digits and `key_sources` a key's sources to 8.
        Compact(model: names.intern(key.model), language: names.intern(key.language), keyboardType: names.intern(key.keyboardType),
                osMajor: Int32(clamping: key.osMajor), lastSeenDay: support.lastSeenDay,
                sources: UInt8(clamping: support.sources), trusted: support.trusted, portrait: key.orientation == .portrait)
    }

    private static func support(_ entry: Compact) -> KeySupport {
        KeySupport(trusted: entry.trusted, sources: Int(entry.sources), lastSeenDay: entry.lastSeenDay)
    }

    private func entry(_ entry: Compact) -> Entry {
        Entry(key: SeriesKey(model: names[entry.model], osMajor: Int(entry.osMajor), language: names[entry.language],
                             orientation: entry.portrait ? .portrait : .landscape, keyboardType: names[entry.keyboardType]),
              support: Self.support(entry))
    }

    /// Whether a commit already wrote the trusted source's row of this indexed key
    /// (`minor` nil: `key_sources`) or of its release `minor` (`release_sources`, minors
    /// 0-31). Writing it again is then provably a no-op: the row is there, or the key
    /// (release) had 8 other sources, and rows only leave with their key (which leaves
    /// this list) or with their release (`forgetTrustedRow`), trusted rows are never retired
    /// and never move a last-seen time.
    public func knowsTrustedRow(_ fingerprint: UInt64, minor: Int? = nil) -> Bool {
        guard let entry = entries[fingerprint] else { return false }
        guard let minor else { return entry.trustedKeyRow }
        return (0..<32).contains(minor) && entry.trustedReleaseRows & (1 << UInt32(minor)) != 0
    }

    /// Records that a commit wrote (or tried to write) the trusted source's row (see `knowsTrustedRow`).
    /// A commit that then fails drops the store, and this list with it (`GroupCommitWriter`).
    public mutating func noteTrustedRow(_ fingerprint: UInt64, minor: Int? = nil) {
        guard var entry = entries[fingerprint] else { return }
        if let minor {
            guard (0..<32).contains(minor) else { return }
            entry.trustedReleaseRows |= 1 << UInt32(minor)
        } else {
            entry.trustedKeyRow = true
        }
        entries[fingerprint] = entry
    }

    /// Forgets the trusted source's row of a release whose rows a commit dropped (`boundReleases`).
    public mutating func forgetTrustedRow(_ fingerprint: UInt64, minor: Int) {
        guard var entry = entries[fingerprint], (0..<32).contains(minor) else { return }
        entry.trustedReleaseRows &= ~(1 << UInt32(minor))
        entries[fingerprint] = entry
    }
}

// MARK: A commit's admission: review, admit, apply

extension IndexedKeys {
    /// A commit's keys as the index sees them (`review`). The store writes `touched` and registers
    /// `unindexed`, reads their stored sources for `admit`, and, once the commit's transaction
    /// succeeded, hands it to `apply`.
    public struct Review: Sendable {
        /// The commit's time (Unix seconds): its UTC day is the reported keys' last-seen day.
        public let now: Int64
        /// Indexed keys: the commit's counts of them pass to the index.
        public var passing: [SeriesKey] = []
        /// Indexed keys last seen on an earlier UTC day: the store moves `keys.last_seen` to `now`
        /// (so it moves at most once a key a day, on every store).
        public var touched: [SeriesKey] = []
        /// Keys not indexed: the store registers them (moving `last_seen` to `now` on a new day) and
        /// reads what it holds of their sources for `admit`.
        public var unindexed: [SeriesKey] = []
        /// Those of `unindexed` a trusted peer reported in this commit.
        fileprivate var trustedUnindexed: Set<SeriesKey> = []
        /// Indexed keys whose support the commit moved, as they will be.
        fileprivate var changed: [(UInt64, Compact)] = []

        /// The support of an unindexed key after this commit, from what its store holds of its
        /// sources (the commit's rows included): the one construction `admit` uses too.
        public func support(of key: SeriesKey, sources: Int, trusted: Bool) -> KeySupport {
            KeySupport(sources: sources, trusted: trusted || trustedUnindexed.contains(key), lastSeen: now)
        }
    }

    /// Sorts a commit's `keys` into indexed and not, and counts the commit's reports into the
    /// indexed keys' support: `newSources`, per key, the sources the commit stored for the first
    /// time (and whether one is a trusted peer's); `trusted`, the keys a trusted peer reported;
    /// `now`, the commit's time. Changes nothing here (`apply` does).
    public func review(_ keys: some Collection<SeriesKey>, newSources: [SeriesKey: (count: Int, trusted: Bool)],
                       trusted: Set<SeriesKey>, now: Int64) -> Review {
        var review = Review(now: now)
        let day = now.dividedRoundingDown(by: 86_400)
        // Trusted keys are some of the commit's keys: as many means all of them (no lookup a key).
        let everyKeyTrusted = trusted.count == keys.count
        for key in keys {
            let new = newSources.isEmpty ? nil : newSources[key]
            let isTrusted = everyKeyTrusted || new?.trusted == true || trusted.contains(key)
            let fingerprint = key.fingerprint
            guard var entry = entries[fingerprint] else {
                review.unindexed.append(key)
                if isTrusted { review.trustedUnindexed.insert(key) }
                continue
            }
            review.passing.append(key)
            let added = new?.count ?? 0
            let moved = entry.lastSeenDay < day
            // The usual report changes nothing: no new source, trusted already (or still not), the same day.
            guard added > 0 || (isTrusted && !entry.trusted) || moved else { continue }
            entry.sources = UInt8(min(8, Int(entry.sources) + added))
            entry.trusted = entry.trusted || isTrusted
            if moved {
                entry.lastSeenDay = day
                review.touched.append(key)
            }
            review.changed.append((fingerprint, entry))
        }
        return review
    }

    /// Where a commit's confirmed keys go (`admit`): applied by `apply` once the commit succeeded.
    public struct Placement: Sendable {
        /// Keys entering the index and their support, strongest first.
        public var admitted: [(key: SeriesKey, support: KeySupport)] = []
        /// Indexed keys they displace (stored still, no longer admitted), weakest first.
        public var evicted: [SeriesKey] = []
        /// Set when `admit` scanned the index: the weakest support left after it (exact).
        fileprivate var floor: KeySupport??
    }

    /// Decides which of a review's unindexed keys enter the index: each one's support is built
    /// from `stored` (what its store holds of its sources, the commit's rows included; none when
    /// missing) and the commit; a confirmed one (`IndexAdmission.confirms`) enters while the index
    /// has room (`maxIndexedKeys`), strongest first, and past it in place of the weakest indexed key
    /// it has more support than. Changes nothing here (`apply` does).
    public func admit(_ review: Review, stored: [SeriesKey: (sources: Int, trusted: Bool)], rules: IndexAdmission) -> Placement {
        var candidates: [(SeriesKey, KeySupport)] = []
        for key in review.unindexed {
            let held = stored[key] ?? (0, false)
            let support = review.support(of: key, sources: held.sources, trusted: held.trusted)
            if rules.confirms(support) { candidates.append((key, support)) }
        }
        return place(candidates, capacity: rules.maxIndexedKeys)
    }

    /// Places confirmed `candidates` (keys not in the index) with `capacity` keys at most: while
    /// there is room they enter, strongest first; past it each remaining candidate, strongest
    /// first, displaces the weakest indexed key (`ranksAbove`) it has more support than.
    public func place(_ candidates: [(SeriesKey, KeySupport)], capacity: Int) -> Placement {
        var placement = Placement()
        guard !candidates.isEmpty else { return placement }
        let (entering, waiting) = Self.fill(candidates, indexed: entries.count, capacity: capacity)
        placement.admitted = entering.map { ($0.0, $0.1) }
        // The index is full when some wait; a scan only when one beats the weakest support seen.
        guard let strongest = waiting.first?.1, floor.map({ strongest > $0 }) ?? true else { return placement }
        // One pass: the indexed keys weaker than the strongest candidate, and the weakest of the rest.
        var weaker: [(support: KeySupport, fingerprint: UInt64)] = []
        var kept: KeySupport?
        for (fingerprint, entry) in entries {
            let support = Self.support(entry)
            if support < strongest {
                weaker.append((support, fingerprint))
            } else if kept.map({ support < $0 }) ?? true {
                kept = support
            }
        }
        weaker.sort { Self.ranksAbove($1, $0) }
        var next = 0
        for candidate in waiting {
            guard next < weaker.count, candidate.1 > weaker[next].support else { break }
            placement.evicted.append(entry(entries[weaker[next].fingerprint]!).key)
            placement.admitted.append((candidate.0, candidate.1))
            next += 1
        }
        // Exact: the weakest kept of those scanned, or of the rest, and what enters.
        var low = next < weaker.count ? weaker[next].support : kept
        for candidate in placement.admitted where low.map({ candidate.support < $0 }) ?? true { low = candidate.support }
        placement.floor = .some(low)
        return placement
    }

    /// Applies a commit's review (the indexed keys' new supports) once its transaction succeeded.
    public mutating func apply(_ review: Review) {
        for (fingerprint, entry) in review.changed where entries[fingerprint] != nil { entries[fingerprint] = entry }
    }

    /// Applies a commit's placement once its transaction succeeded: the displaced keys leave, the admitted enter.
    public mutating func apply(_ placement: Placement) {
        for key in placement.evicted { entries[key.fingerprint] = nil }
        for (key, support) in placement.admitted { insert(key, support: support) }
        if let scanned = placement.floor { floor = scanned }
    }
}
