import KBTDCore
import Synchronization

/// A rendered answer with its validator.
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
final class HeightService: Sendable {
    private struct State {
        var index: HeightIndex
        var estimator: HeightEstimator
        var cache: [String: CachedAnswer] = [:]
    }

    private let state: Mutex<State>
    /// Past this many cached answers the cache starts over (bounded memory).
    private let cacheLimit = 100_000

    init(index: HeightIndex, settings: EstimatorSettings) {
        state = Mutex(State(index: index, estimator: HeightEstimator(settings: settings)))
    }

    func apply(_ delta: AggregateDelta) {
        guard !delta.isEmpty else { return }
        state.withLock { state in
            state.index.apply(delta)
            state.cache.removeAll(keepingCapacity: true)
        }
    }

    func update(settings: EstimatorSettings) {
        state.withLock { state in
            guard state.estimator.settings != settings else { return }
            state.estimator.settings = settings
            state.cache.removeAll(keepingCapacity: true)
        }
    }

    func height(_ query: HeightQuery) -> CachedAnswer {
        let key = "1|\(query.model)|\(query.language)|\(query.osMajor ?? -1)|\(query.orientation.rawValue)|\(query.keyboardType)"
        return answer(key) { state in
            let estimate = state.estimator.estimate(query, in: state.index)
            return (estimate.json, estimate.basis)
        }
    }

    /// The estimate `height(_:)` serves, as a value (the dashboard marks it on its histograms).
    func estimate(_ query: HeightQuery) -> HeightEstimate {
        state.withLock { $0.estimator.estimate(query, in: $0.index) }
    }

    var minSamples: Int64 { state.withLock { $0.estimator.settings.minSamples } }

    func heights(model: String, os: String?) -> CachedAnswer {
        answer("n|\(model)|\(os ?? "")") { ($0.estimator.allEstimates(model: model, os: os, in: $0.index), nil) }
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

    private func answer(_ key: String, render: (State) -> (JSONOutput, EstimateBasis?)) -> CachedAnswer {
        state.withLock { state in
            if let cached = state.cache[key] { return cached }
            let (json, basis) = render(state)
            let body = Array(json.serialized().utf8)
            let answer = CachedAnswer(body: body, etag: Self.etag(body), basis: basis, bases: basis == nil ? Self.bases(json) : [])
            if state.cache.count >= cacheLimit { state.cache.removeAll(keepingCapacity: true) }
            state.cache[key] = answer
            return answer
        }
    }

    /// A strong validator from the body's bytes (FNV-1a, 64 bit): equal answers
    /// get equal tags across restarts, so phones revalidate cheaply.
    static func etag(_ body: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in body {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        let hex = String(hash, radix: 16)
        return "\"" + String(repeating: "0", count: 16 - hex.count) + hex + "\""
    }
}
