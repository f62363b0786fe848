// A commit's admission to the index, decided here for every store: `review`, `admit`, then
// `apply` once the commit's transaction succeeded (the stores write the decisions in between).

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
