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
    struct Compact: Sendable {
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

    /// By fingerprint (internal: `IndexedKeys+Admission` decides over them).
    var entries = CompactMap<UInt64, Compact>()
    /// Bytes of one entry's value (32: the trusted-row bits sit in what was padding).
    static var entryStride: Int { MemoryLayout<Compact>.stride }
    /// Model, language and keyboard-type strings, each held once.
    private var names = IndexStrings()
    /// At most the weakest support in the index (exact after each scan; supports only grow in between).
    var floor: KeySupport?

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

    static func support(_ entry: Compact) -> KeySupport {
        KeySupport(trusted: entry.trusted, sources: Int(entry.sources), lastSeenDay: entry.lastSeenDay)
    }

    func entry(_ entry: Compact) -> Entry {
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
