/// How much a key's data is backed, which decides what a full index keeps:
/// trusted data first, then more distinct sources (`key_sources`, at most 8),
/// then the more recent UTC day it was last reported.
public struct KeySupport: Sendable, Comparable, CustomStringConvertible {
    public var trusted: Bool
    public var sources: Int
    /// `last_seen` in whole UTC days.
    public var lastSeenDay: Int64

    public init(trusted: Bool, sources: Int, lastSeenDay: Int64) {
        self.trusted = trusted
        self.sources = sources
        self.lastSeenDay = lastSeenDay
    }

    /// A key's support as a store holds it: its `key_sources` rows (`sources`, counted up to 8),
    /// whether one is a trusted peer's, and `keys.last_seen` (Unix seconds). Every store builds
    /// supports here, when it loads its index and when a commit reports a key not indexed.
    public init(sources: Int, trusted: Bool, lastSeen: Int64) {
        self.init(trusted: trusted, sources: min(8, max(0, sources)), lastSeenDay: lastSeen.dividedRoundingDown(by: 86_400))
    }

    public static func < (a: KeySupport, b: KeySupport) -> Bool {
        if a.trusted != b.trusted { return !a.trusted }
        if a.sources != b.sources { return a.sources < b.sources }
        return a.lastSeenDay < b.lastSeenDay
    }

    public var description: String { "\(trusted ? "trusted, " : "")\(sources) sources, day \(lastSeenDay)" }
}
