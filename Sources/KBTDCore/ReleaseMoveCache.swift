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

/// The estimator's release decisions for one generation of a `HeightIndex`: each is computed
/// once (a walk over every model measuring the language) and then looked up, so an answer's
/// release work is a lookup per release of its key, not a walk per release and request. The
/// index starts a new cache whenever it changes (`apply`, `remove`); a copy of the index that
/// does not change keeps sharing it. Computed outside the lock: two requests racing on the same
/// question compute the same answer twice, never block each other on it.
public final class ReleaseMoveCache: Sendable {
    private struct State {
        var moves: [ReleaseMoveKey: Bool] = [:]
        var computed = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// The cached decision for `key`, computed by `compute` on a miss.
    public func moved(_ key: ReleaseMoveKey, _ compute: () -> Bool) -> Bool {
        if let known = state.withLock({ $0.moves[key] }) { return known }
        let moved = compute()
        state.withLock {
            $0.moves[key] = moved
            $0.computed += 1
        }
        return moved
    }

    /// Decisions computed (misses) in this generation: the estimator's release work, for tests and benchmarks.
    public var computed: Int { state.withLock { $0.computed } }
}
