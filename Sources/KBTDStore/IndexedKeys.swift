import KBTDCore

/// The keys in the in-memory index and their support, kept by a store's
/// writer: it decides which confirmed keys enter a full index and which
/// indexed keys they displace. A key displaces only a weaker one (so keys
/// with trusted data are never displaced by keys without), and the displaced
/// key stays stored and may come back once it is the stronger.
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
    private struct Compact: Sendable {
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

    /// Records a commit's report of an indexed key: new sources, trusted data,
    /// the day. Returns nil when the key is not indexed (nothing recorded), else whether
    /// the day changed (the caller writes `last_seen`). One lookup: the entry is changed in place.
    public mutating func report(_ fingerprint: UInt64, newSources: Int, trusted: Bool, day: Int64) -> Bool? {
        guard let index = entries.index(forKey: fingerprint) else { return nil }
        var entry = entries.values[index]
        let moved = entry.lastSeenDay < day
        // The usual report changes nothing: no new source, trusted already (or still not), the same day.
        guard newSources > 0 || entry.sources > 8 || (trusted && !entry.trusted) || moved else { return false }
        entry.sources = UInt8(min(8, Int(entry.sources) + newSources))
        entry.trusted = entry.trusted || trusted
        if moved { entry.lastSeenDay = day }
        entries.values[index] = entry
        return moved
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

    /// Places confirmed `candidates` (keys not in the index) with `capacity`
    /// keys at most: while there is room they enter, strongest first; past it
    /// each remaining candidate, strongest first, displaces the weakest
    /// indexed key it is stronger than. Returns the keys that entered and the
    /// keys they displaced (both already applied here).
    public mutating func place(_ candidates: [(SeriesKey, KeySupport)], capacity: Int)
        -> (admitted: [SeriesKey], evicted: [SeriesKey]) {
        guard !candidates.isEmpty else { return ([], []) }
        let (entering, waiting) = Self.fill(candidates, indexed: entries.count, capacity: capacity)
        var admitted: [SeriesKey] = []
        var evicted: [SeriesKey] = []
        for candidate in entering {
            admitted.append(candidate.0)
            insert(candidate.0, support: candidate.1)
        }
        if let strongest = waiting.first?.1, entries.count >= capacity, floor.map({ strongest > $0 }) ?? true {
            // The weakest indexed keys weaker than the strongest candidate, weakest first.
            let weaker = entries.values.filter { Self.support($0) < strongest }.map(entry).sorted { $0.support < $1.support }
            var next = 0
            for candidate in waiting {
                guard next < weaker.count, candidate.1 > weaker[next].support else { break }
                entries[weaker[next].key.fingerprint] = nil
                evicted.append(weaker[next].key)
                entries[candidate.0.fingerprint] = compact(candidate.0, candidate.1)
                admitted.append(candidate.0)
                next += 1
            }
            // Exact again: the weakest kept of those scanned, or of the whole index, and what entered.
            var low = next < weaker.count ? weaker[next].support : entries.values.lazy.map(Self.support).min()
            for candidate in waiting.prefix(next) where low.map({ candidate.1 < $0 }) ?? true { low = candidate.1 }
            floor = low
        }
        return (admitted, evicted)
    }
}
