// The capacity rules every store applies to its index: which keys may enter (`confirms`)
// and how many fit (`IndexedKeys.fill`). The keys themselves are `IndexedKeys`, ranked by `KeySupport`.

/// When a key joins the in-memory index (the rest stay on disk only).
public struct IndexAdmission: Sendable, Equatable {
    /// Distinct untrusted networks that must report a key (a trusted peer suffices alone).
    public var minSources = 3
    /// Most keys the index holds; past it a confirmed key enters only in place
    /// of an indexed key with less support (`KeySupport`), else stays on disk.
    public var maxIndexedKeys = 50_000

    public init(minSources: Int = 3, maxIndexedKeys: Int = 50_000) {
        self.minSources = minSources
        self.maxIndexedKeys = maxIndexedKeys
    }

    /// A key is confirmed (may enter the index) once a trusted peer or
    /// `minSources` distinct networks reported it.
    public func confirms(_ support: KeySupport) -> Bool {
        support.trusted || support.sources >= minSources
    }
}

extension IndexedKeys {
    /// The room rule: an index of `indexed` keys has room for `capacity - indexed` more
    /// (none when it is over), which confirmed candidates fill strongest first (`ranksAbove`).
    /// Returns those that enter and those left waiting, each strongest first.
    public static func fill(_ candidates: [(SeriesKey, KeySupport)], indexed: Int, capacity: Int)
        -> (entering: [(SeriesKey, KeySupport)], waiting: [(SeriesKey, KeySupport)]) {
        let ordered = candidates.sorted { ranksAbove(($0.1, $0.0.fingerprint), ($1.1, $1.0.fingerprint)) }
        let room = min(ordered.count, max(0, capacity - indexed))
        return (Array(ordered[..<room]), Array(ordered[room...]))
    }

    /// The one order of keys by support: more support ranks above; between equal supports,
    /// the higher `SeriesKey.fingerprint` (stable across processes and stores), so every store
    /// picks the same keys to enter and to leave.
    static func ranksAbove(_ a: (KeySupport, UInt64), _ b: (KeySupport, UInt64)) -> Bool {
        if a.0 != b.0 { return a.0 > b.0 }
        return a.1 > b.1
    }
}
