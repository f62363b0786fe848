import Synchronization

/// One "did this release move this keyboard" question (`HeightEstimator.releaseMoved`), with the
/// settings its answer depends on.
public struct ReleaseMoveKey: Hashable, Sendable {
    public var language: LanguageKey
    public var osMajor: Int
    public var minor: Int
    public var minSamples: Int64
    public var minSources: Int

    public init(language: LanguageKey, osMajor: Int, minor: Int, minSamples: Int64, minSources: Int) {
        self.language = language
        self.osMajor = osMajor
        self.minor = minor
        self.minSamples = minSamples
        self.minSources = minSources
    }
}

/// The decisions a change to the index can touch together: one keyboard (language, orientation,
/// type) on one OS major. A decision walks only the keys of its keyboard and major, so a change to
/// no key of theirs leaves it as it was.
public struct ReleaseMoveScope: Hashable, Sendable {
    public var language: LanguageKey
    public var osMajor: Int

    public init(language: LanguageKey, osMajor: Int) {
        self.language = language
        self.osMajor = osMajor
    }
}

/// The estimator's release decisions for one generation of a `HeightIndex`: each is computed
/// once (a walk over every model measuring the language) and then looked up, so an answer's
/// release work is a lookup per release of its key, not a walk per release and request. Every
/// change to the index (`apply`, `remove`) starts a new cache holding the old one's decisions
/// except those of the scopes it touched (`ReleaseMoveScope`), so under steady ingest a commit
/// costs the next answers only the decisions of the keyboards it changed, not a walk for every
/// language. A copy of the index that does not change keeps sharing its cache; decisions made
/// on an older copy stay in that copy's cache. Computed outside the lock: two requests racing on
/// the same question compute the same answer twice, never block each other on it.
public final class ReleaseMoveCache: Sendable {
    private struct State {
        var moves: [ReleaseMoveScope: [ReleaseMoveKey: Bool]] = [:]
        var computed = 0
    }

    private let state: Mutex<State>

    public init() { state = Mutex(State()) }

    /// A cache for the next generation: `old`'s decisions but those of `touched` (per scope the
    /// decisions are shared until written, so this costs a dictionary entry per scope held).
    public init(keeping old: ReleaseMoveCache, except touched: Set<ReleaseMoveScope>) {
        var moves = old.state.withLock { $0.moves }
        for scope in touched { moves[scope] = nil }
        state = Mutex(State(moves: moves))
    }

    /// The cached decision for `key`, computed by `compute` on a miss.
    public func moved(_ key: ReleaseMoveKey, _ compute: () -> Bool) -> Bool {
        let scope = ReleaseMoveScope(language: key.language, osMajor: key.osMajor)
        if let known = state.withLock({ $0.moves[scope]?[key] }) { return known }
        let moved = compute()
        state.withLock {
            $0.moves[scope, default: [:]][key] = moved
            $0.computed += 1
        }
        return moved
    }

    /// Decisions computed (misses) in this generation: the estimator's release work, for tests and benchmarks.
    public var computed: Int { state.withLock { $0.computed } }
}
