import KBTDCore

// The capacity rules every store applies to its index: which keys may enter (`confirms`)
// and how many fit (`fill`). The keys themselves are `IndexedKeys`, ranked by `KeySupport`.

extension IndexedKeys {
    /// The room rule every store applies: an index of `indexed` keys has room for
    /// `capacity - indexed` more (none when it is over), which confirmed candidates
    /// fill strongest first. Returns those that enter and those left waiting, each
    /// strongest first. (A store that cannot displace keys leaves the waiting ones on disk.)
    public static func fill(_ candidates: [(SeriesKey, KeySupport)], indexed: Int, capacity: Int)
        -> (entering: [(SeriesKey, KeySupport)], waiting: [(SeriesKey, KeySupport)]) {
        let ordered = candidates.sorted { $0.1 > $1.1 }
        let room = min(ordered.count, max(0, capacity - indexed))
        return (Array(ordered[..<room]), Array(ordered[room...]))
    }
}

extension IndexAdmission {
    /// A key is confirmed (may enter the index) once a trusted peer or
    /// `minSources` distinct networks reported it.
    public func confirms(_ support: KeySupport) -> Bool {
        support.trusted || support.sources >= minSources
    }
}
