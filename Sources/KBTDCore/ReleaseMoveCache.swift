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

/// The estimator's release decisions for one generation of a `HeightIndex`. A decision is a vote
/// over the models that measured the keyboard on the release (each model's difference between its
/// height there and before, or none); the cache keeps each decision's per-model differences and
/// their histogram, so an answer's release work is a lookup per release of its key. Every change
/// to the index (`apply`, `remove`) starts a new cache holding the old one's decisions, with the
/// models it touched marked stale in the scopes it touched (`ReleaseMoveScope`): the next answer
/// recomputes those models' differences only and reads the decision off the histogram. So under
/// steady ingest a decision costs the models a commit changed, never a walk over every model that
/// shares the keyboard (a decision is computed over all models once, the first time it is asked).
/// A copy of the index that does not change keeps sharing its cache.
///
/// A decision's first computation walks every model of its keyboard (thousands at a million keys).
/// With a `budget`, one call computes at most that many models' differences and keeps the rest
/// pending for the next call (`unfinished` counts the calls that left work behind): the daemon
/// answers under its index lock, so it retakes the lock until nothing is pending
/// (`LiveHeights`), and its background settler computes the decisions ahead of the questions
/// (`HeightEstimator.settleReleaseDecisions`); no hold of the lock grows with the number of models.
public final class ReleaseMoveCache: Sendable {
    /// One decision: each counting model's difference, their histogram, and the models whose
    /// difference may have changed since.
    struct Decision {
        var differences: [String: Int] = [:]
        var histogram: [Int: Int] = [:]
        var stale: Set<String> = []
        var moved = false

        mutating func set(_ model: String, _ difference: Int?) {
            if let old = differences.removeValue(forKey: model) {
                histogram[old]! -= 1
                if histogram[old] == 0 { histogram[old] = nil }
            }
            guard let difference else { return }
            differences[model] = difference
            histogram[difference, default: 0] += 1
        }
    }

    /// What a complete walk over every decision covered (`HeightEstimator.settleReleaseDecisions`):
    /// the index's count of new keyboards and supported releases (`HeightIndex.releaseDecisionsAdded`)
    /// and the settings the decisions were made with. While both stay, every decision exists and
    /// only the stale ones need work.
    struct Walk: Equatable {
        var added: Int
        var minSamples: Int64
        var minSources: Int
    }

    private struct State {
        var moves: [ReleaseMoveScope: [ReleaseMoveKey: Decision]] = [:]
        /// Decisions with stale models: what a change touched, until brought up to date.
        var stale: Set<ReleaseMoveKey> = []
        var walked: Walk?
        var computed = 0
        var differencesComputed = 0
        var unfinished = 0
        var lookups = 0
    }

    private let state: Mutex<State>

    public init() { state = Mutex(State()) }

    /// A cache for the next generation: `old`'s decisions, with the models of `touched` stale in
    /// their scopes' decisions (per scope the decisions are shared until written).
    public init(keeping old: ReleaseMoveCache, except touched: [ReleaseMoveScope: Set<String>]) {
        var (moves, stale, walked) = old.state.withLock { ($0.moves, $0.stale, $0.walked) }
        for (scope, models) in touched where moves[scope] != nil {
            for key in moves[scope]!.keys {
                moves[scope]![key]!.stale.formUnion(models)
                stale.insert(key)
            }
        }
        state = Mutex(State(moves: moves, stale: stale, walked: walked))
    }

    /// The decision for `key`: cached, or brought up to date by computing `difference` for the
    /// stale models only, or (the first time) for every model `models` lists; `decide` reads it
    /// off the histogram of differences (difference: number of models). At most `budget` models'
    /// differences are computed in one call; past it the rest stay stale, the call counts as
    /// `unfinished` and answers from the models computed so far (an answer the caller must not keep).
    public func moved(_ key: ReleaseMoveKey, budget: Int = .max, models: () -> [String], difference: (String) -> Int?,
                      decide: ([Int: Int]) -> Bool) -> Bool {
        let scope = ReleaseMoveScope(language: key.language, osMajor: key.osMajor)
        let known = state.withLock { state in
            state.lookups += 1
            return state.moves[scope]?[key]
        }
        if let known, known.stale.isEmpty { return known.moved }
        var decision = known ?? Decision(stale: Set(models()))
        var computed = 0
        while computed < budget, let model = decision.stale.popFirst() {
            decision.set(model, difference(model))
            computed += 1
        }
        decision.moved = decide(decision.histogram)
        let finished = decision.stale.isEmpty
        state.withLock {
            $0.moves[scope, default: [:]][key] = decision
            if finished {
                $0.computed += 1
                $0.stale.remove(key)
            } else {
                $0.unfinished += 1
                $0.stale.insert(key)
            }
            $0.differencesComputed += computed
        }
        return decision.moved
    }

    /// The decisions a change made stale (or a budget left unfinished) since they were last made.
    var staleDecisions: [ReleaseMoveKey] { state.withLock { Array($0.stale) } }

    /// Whether a complete walk covered every decision `walk` stands for (nothing new since).
    func hasWalked(_ walk: Walk) -> Bool { state.withLock { $0.walked == walk } }

    /// Records a complete walk: every decision of `walk` is made.
    func markWalked(_ walk: Walk) { state.withLock { $0.walked = walk } }

    /// Decisions looked up (`moved` calls: by answers and by the settler) in this generation: what
    /// settling after a change costs besides the differences, for tests.
    public var lookups: Int { state.withLock { $0.lookups } }

    /// Calls of `moved` that reached their budget with models still pending: an answer computed
    /// meanwhile read a decision that was not final.
    public var unfinished: Int { state.withLock { $0.unfinished } }

    /// Decisions computed or brought up to date in this generation: the estimator's release work,
    /// for tests and benchmarks.
    public var computed: Int { state.withLock { $0.computed } }

    /// Per-model differences computed in this generation (a decision's first computation counts
    /// every model of its keyboard; an update, the stale ones).
    public var differencesComputed: Int { state.withLock { $0.differencesComputed } }
}
