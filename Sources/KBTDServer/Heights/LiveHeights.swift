#if canImport(Glibc)
import Glibc
#endif
import KBTDCore
import Synchronization

/// An answer's body with its validator, as the live index's cache keeps it (`RenderedAnswers`
/// keeps the whole HTTP answer built from it).
struct CachedAnswer: Sendable {
    var body: [UInt8]
    var etag: String
    /// The level that answered a single-height question (nil for `/v1/heights`).
    var basis: EstimateBasis? = nil
    /// The levels of a `/v1/heights` answer's estimates, in order (empty for `/v1/height`).
    var bases: [EstimateBasis] = []
}

/// Holds the in-memory `HeightIndex` the height endpoints answer from, the
/// estimator's settings, and a cache of rendered answers that each commit
/// (and each settings change) empties. Requests never touch SQLite.
///
/// Two locks, held briefly: the index lock only while an estimate is computed
/// (bounded work: key caps bound a model's languages, `/v1/heights` lists
/// only supported estimates, and a release decision computes at most
/// `releaseWorkBudget` models per hold: an answer that meets an unfinished one
/// lets go of the lock and computes again), the cache lock only for a lookup or
/// an insert. Serialising an answer happens outside both, so one expensive
/// answer never holds up the writer or another request for long. The release
/// decisions themselves are made ahead of the questions by `settleReleaseDecisions`
/// (the app's background settler), after start-up and after every change.
final class LiveHeights: Sendable {
    private struct Model {
        var index: HeightIndex
        var estimator: HeightEstimator
    }

    private struct Cache {
        var answers: [String: CachedAnswer] = [:]
        var bytes = 0
        /// Bumped whenever the index or the settings change: an answer computed
        /// before is not cached after.
        var generation: UInt64 = 0
    }

    private let model: Mutex<Model>
    private let cache = Mutex(Cache())
    /// The cache's generation, readable without its lock: answers rendered
    /// elsewhere (the fast path's bytes) are valid while it is unchanged.
    private let published = Atomic<UInt64>(0)
    /// The cache starts over past this many bytes of answers (bounded memory
    /// whatever mix of questions clients ask).
    let cacheLimitBytes: Int

    /// Models' differences one release decision computes per hold of the index lock (a few
    /// microseconds each).
    static let releaseWorkBudget = 256
    /// Signalled on every change (and once at the start): the release decisions to settle.
    let indexChanges: AsyncStream<Void>
    private let changed: AsyncStream<Void>.Continuation

    init(index: HeightIndex, settings: EstimatorSettings, cacheLimitBytes: Int = 16 << 20) {
        var index = index
        index.releaseWorkBudget = Self.releaseWorkBudget
        index.setReleaseSupportMinimum(settings.minSources)
        model = Mutex(Model(index: index, estimator: HeightEstimator(settings: settings)))
        self.cacheLimitBytes = cacheLimitBytes
        (indexChanges, changed) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        changed.yield()
    }

    deinit { changed.finish() }

    func apply(_ delta: AggregateDelta) {
        guard !delta.isEmpty else { return }
        model.withLock { $0.index.apply(delta) }
        invalidate()
    }

    /// Makes the index's release decisions, `releaseWorkBudget` models per hold of the index
    /// lock, until every one is made; returns whether any work was left (false: already settled).
    /// Stops early, unsettled, when the task is cancelled.
    @discardableResult
    func settleReleaseDecisions() async -> Bool {
        var passes = 0
        while !Task.isCancelled {
            let settled = model.withLock { $0.estimator.settleReleaseDecisions(in: $0.index, budget: Self.releaseWorkBudget) }
            if settled { return passes > 0 }
            passes += 1
            await Task.yield()
        }
        return true
    }

    /// Takes keys out of the index (displaced by keys with more support, or
    /// deleted from the store); keys it does not hold are ignored.
    func remove(_ keys: [SeriesKey]) {
        guard !keys.isEmpty else { return }
        model.withLock { $0.index.remove(keys) }
        invalidate()
    }

    func update(settings: EstimatorSettings) {
        let changed = model.withLock { model -> Bool in
            guard model.estimator.settings != settings else { return false }
            model.estimator.settings = settings
            model.index.setReleaseSupportMinimum(settings.minSources)
            return true
        }
        if changed { invalidate() }
    }

    /// The release decisions' work in the current generation of the index: models' differences
    /// computed, holds that left a decision unfinished, and decisions looked up (`ReleaseMoveCache`).
    var releaseDecisionWork: (differences: Int, unfinished: Int, lookups: Int) {
        model.withLock { ($0.index.releaseMoves.differencesComputed, $0.index.releaseMoves.unfinished, $0.index.releaseMoves.lookups) }
    }

    /// Keys in the index.
    var keyCount: Int { model.withLock { $0.index.seriesCount } }

    private func invalidate() {
        changed.yield()
        let generation = cache.withLock { cache in
            cache.answers.removeAll(keepingCapacity: true)
            cache.bytes = 0
            cache.generation &+= 1
            return cache.generation
        }
        published.store(generation, ordering: .releasing)
    }

    /// Changes whenever an answer may change (a commit, new estimator settings).
    var generation: UInt64 { published.load(ordering: .acquiring) }

    func height(_ query: HeightQuery) -> CachedAnswer {
        let key = "1|\(query.model)|\(query.language)|\(query.osMajor ?? -1).\(query.osMinor ?? -1)|\(query.orientation.rawValue)|\(query.keyboardType)|\(query.screen?.description ?? "")"
        return answer(key) { model in
            let estimate = model.estimator.estimate(query, in: model.index)
            return ({ Array(estimate.json.serialized().utf8) }, estimate.basis, [])
        }
    }

    /// The estimate `height(_:)` serves, as a value (the dashboard marks it on its histograms).
    func estimate(_ query: HeightQuery) -> HeightEstimate {
        settled { $0.estimator.estimate(query, in: $0.index) }
    }

    /// A model's keys with when their height last changed (the dashboard's change table).
    func changes(model name: String) -> [HeightChange] {
        settled { $0.estimator.heightChanges(model: name, in: $0.index) }
    }

    /// The screens a model's phones reported (batches per screen), largest count first (the dashboard's screen table).
    func screens(model name: String) -> [ScreenReports] {
        model.withLock { ScreenReports.of(name, in: $0.index) }
    }

    /// `body` under the index lock, taken again until it read no unfinished release decision
    /// (each hold computes at most `releaseWorkBudget` models of one; the decisions keep what
    /// each hold computed). Between holds the writer and other requests get the lock.
    private func settled<T>(_ body: (Model) -> T) -> T {
        while true {
            let (value, final) = model.withLock { model in
                let unfinished = model.index.releaseMoves.unfinished
                let value = body(model)
                return (value, model.index.releaseMoves.unfinished == unfinished)
            }
            if final { return value }
            #if canImport(Glibc)
            sched_yield()
            #endif
        }
    }

    var minSamples: Int64 { model.withLock { $0.estimator.settings.minSamples } }

    /// `os` is cached by its release (major.minor: what the estimator uses); the body
    /// echoes the asked string, spliced into the cached bytes.
    func heights(model modelName: String, os: String?, screen: ScreenSize? = nil) -> CachedAnswer {
        let major = os.flatMap(FieldRules.osMajor)
        let minor = os.flatMap(FieldRules.osMinor)
        let shared = answer("n|\(modelName)|\(major ?? -1).\(minor ?? -1)|\(screen?.description ?? "")") { model in
            let all = model.estimator.allEstimates(model: modelName, osMajor: major, osMinor: minor, screen: screen, in: model.index)
            return ({ Array(all.serialized().utf8) }, nil, Self.bases(all))
        }
        guard let os else { return shared }
        // The shared body starts `{"model":"M","os":null,`: model and os are validated
        // ([A-Za-z0-9,._-] and digits with dots), so neither needs escaping.
        let prefix = Array("{\"model\":\"\(modelName)\",\"os\":".utf8)
        let null = Array("null".utf8)
        guard shared.body.starts(with: prefix), shared.body[prefix.count...].starts(with: null) else { return shared }
        var spliced = shared
        spliced.body = prefix + Array("\"\(os)\"".utf8) + shared.body[(prefix.count + null.count)...]
        spliced.etag = Self.etag(spliced.body)
        return spliced
    }

    /// The `basis` of each entry of a `/v1/heights` body's `estimates`.
    private static func bases(_ body: JSONOutput) -> [EstimateBasis] {
        guard case .object(let members) = body,
              case .array(let estimates)? = members.first(where: { $0.0 == "estimates" })?.1 else { return [] }
        return estimates.compactMap { estimate in
            guard case .object(let fields) = estimate, case .string(let basis)? = fields.first(where: { $0.0 == "basis" })?.1 else {
                return nil
            }
            return EstimateBasis(rawValue: basis)
        }
    }

    /// Looks `key` up; on a miss computes the answer under the index lock
    /// (`compute` returns a renderer and the levels that answered) and renders
    /// it outside every lock.
    private func answer(_ key: String,
                        compute: (Model) -> (() -> [UInt8], EstimateBasis?, [EstimateBasis])) -> CachedAnswer {
        let (hit, generation) = cache.withLock { ($0.answers[key], $0.generation) }
        if let hit { return hit }
        let (render, basis, bases) = settled { compute($0) }
        let body = render()
        let answer = CachedAnswer(body: body, etag: Self.etag(body), basis: basis, bases: bases)
        cache.withLock { cache in
            guard cache.generation == generation else { return }
            if cache.bytes + body.count > cacheLimitBytes {
                cache.answers.removeAll(keepingCapacity: true)
                cache.bytes = 0
            }
            if cache.answers.updateValue(answer, forKey: key) == nil { cache.bytes += body.count + key.utf8.count }
        }
        return answer
    }

    /// A strong validator from the body's bytes (FNV-1a, 64 bit): equal answers
    /// get equal tags across restarts, so phones revalidate cheaply.
    static func etag(_ body: [UInt8]) -> String {
        let hash = Fingerprint.of(bytes: body)
        let hex = String(hash, radix: 16)
        return "\"" + String(repeating: "0", count: 16 - hex.count) + hex + "\""
    }
}
