import Foundation
import KBTDCore
import Prometheus
import Synchronization

/// The counters `/metrics` exposes, on a registry of the daemon's own (not the
/// process-wide bootstrap, so tests and embedders can run several daemons).
public final class ServerMetrics: Sendable {
    public let registry = PrometheusCollectorRegistry()
    let queueDepth: Gauge
    let queueCapacity: Gauge
    let commitSeconds: ValueHistogram
    let commitBatches: ValueHistogram
    let samplesAccepted: Counter
    let walBytes: Gauge
    let indexedKeys: Gauge
    let storedKeys: Gauge
    let refusedVotes: Gauge
    let implausibleVotes: Gauge
    let bodyBytesHeld: Gauge
    /// The store kind, and on PostgreSQL the pool and the index catch-up.
    let store: StoreMetrics
    /// Counters by label values, so the hot path does not go through the
    /// registry (a lock and a label array) on every request.
    private let counters = Mutex<[String: Counter]>([:])
    /// Served `/v1/height` answers by basis since start, for the dashboard (the same figures as
    /// `kbtd_height_answers_total`, which Prometheus cannot be asked for from here).
    private let answers = Mutex<(single: [EstimateBasis: Int64], model: [EstimateBasis: Int64])>(([:], [:]))
    /// Unix seconds at which these counters started.
    let startedAt = Int64(Date().timeIntervalSince1970)

    /// A `kbtd_` series name (`name("wal", unit: "bytes", ...)` is `kbtd_wal_bytes`).
    static func name(_ metric: String, unit: String = "", _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "kbtd", metricName: metric, unitName: unit, helpText: help)
    }

    private static var requests: MetricNameDescriptor { name("http_requests", unit: "total", "HTTP requests by route and status") }
    private static var batches: MetricNameDescriptor { name("batches", unit: "total", "Ingested batches by outcome (stored, duplicate, rejected, unavailable)") }
    private static var heightAnswers: MetricNameDescriptor {
        name("height_answers", unit: "total",
             "Height answers by route and fallback level: GET /v1/height answers (200 and 304), and each estimate of a GET /v1/heights answer")
    }
    private static var rejected: MetricNameDescriptor { name("samples_rejected", unit: "total", "Rejected samples by the field at fault") }

    /// - Parameter postgres: true on a PostgreSQL node (its pool and catch-up series are exported).
    init(postgres: Bool = false) {
        queueDepth = registry.makeGauge(descriptor: Self.name("write_queue_depth", "Batches waiting for a commit"))
        queueCapacity = registry.makeGauge(descriptor: Self.name("write_queue_capacity", "Most batches that may wait for a commit (past it: 503)"))
        commitSeconds = registry.makeValueHistogram(
            descriptor: Self.name("commit", unit: "seconds", "Time to commit one group of batches (including fsync)"),
            buckets: [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5])
        commitBatches = registry.makeValueHistogram(
            descriptor: Self.name("commit_batches", "Batches per group commit"),
            buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024])
        samplesAccepted = registry.makeCounter(descriptor: Self.name("samples_accepted", unit: "total", "Samples stored"))
        walBytes = registry.makeGauge(descriptor: Self.name("wal", unit: "bytes", "Size of the SQLite write-ahead log"))
        indexedKeys = registry.makeGauge(descriptor: Self.name("index_keys", "Keys in the in-memory height index"))
        storedKeys = registry.makeGauge(descriptor: Self.name("stored_keys", "Keys stored, answering or not (max_keys bounds it)"))
        refusedVotes = registry.makeGauge(descriptor: Self.name("votes_refused_today",
                                                                 "Votes given no weight today because a source's ledger budget was spent"))
        implausibleVotes = registry.makeGauge(descriptor: Self.name("votes_implausible_today",
                                                                    "Untrusted votes given no weight today for a height no keyboard has"))
        bodyBytesHeld = registry.makeGauge(descriptor: Self.name("body_bytes_held", unit: "",
                                                                  "Bytes request bodies in flight hold (body_budget_bytes bounds it)"))
        store = StoreMetrics(registry: registry, postgres: postgres)
    }

    private func counter(_ key: String, _ make: () -> Counter) -> Counter {
        counters.withLock { cache in
            if let counter = cache[key] { return counter }
            let counter = make()
            cache[key] = counter
            return counter
        }
    }

    func request(route: String, status: Int) {
        requests(route: route, status: status).increment()
    }

    /// Height answers the fast path sent without the router, by protocol (`http/1.1`, `h2`);
    /// callers keep the counter (one lookup per listener, not per answer).
    func fastAnswers(protocol name: String) -> Counter {
        counter("f|\(name)") {
            registry.makeCounter(descriptor: Self.name("fast_answers", unit: "total",
                                                       "Height answers sent by the fast path without the router, by protocol"),
                                 labels: [("protocol", name)])
        }
    }

    /// Batches the batch path answered without the router, by protocol (`http/1.1`, `h2`); callers keep the counter.
    func fastBatches(protocol name: String) -> Counter {
        counter("fb|\(name)") {
            registry.makeCounter(descriptor: Self.name("fast_batches", unit: "total",
                                                       "Batches answered by the batch path without the router, by protocol"),
                                 labels: [("protocol", name)])
        }
    }

    func batch(_ outcome: BatchOutcome) {
        counter("b|\(outcome.rawValue)") {
            registry.makeCounter(descriptor: Self.batches, labels: [("outcome", outcome.rawValue)])
        }.increment()
    }

    /// What one sent answer adds to `kbtd_height_answers_total` and to the dashboard's counts by
    /// level, resolved once when the answer is rendered (`levels(basis:bases:)`), so that sending it
    /// again costs an increment per level present rather than a tally and a counter look-up each.
    struct AnswerLevels: Sendable {
        /// `/v1/height`'s one level.
        fileprivate var single: (basis: EstimateBasis, counter: Counter)?
        /// `/v1/heights`' levels with how many of its estimates each answered.
        fileprivate var model: [(basis: EstimateBasis, count: Int64, counter: Counter)] = []
    }

    /// The levels of an answer: `basis` for a `/v1/height` answer (200 and 304), each of `bases` for a `/v1/heights` one.
    func levels(basis: EstimateBasis?, bases: [EstimateBasis]) -> AnswerLevels {
        var levels = AnswerLevels()
        if let basis { levels.single = (basis, answerCounter("/v1/height", basis)) }
        var tally: [EstimateBasis: Int64] = [:]
        for basis in bases { tally[basis, default: 0] += 1 }
        levels.model = tally.map { ($0.key, $0.value, answerCounter("/v1/heights", $0.key)) }
        return levels
    }

    /// Counts one answer sent with these levels.
    func count(_ levels: AnswerLevels) {
        guard levels.single != nil || !levels.model.isEmpty else { return }
        answers.withLock { answers in
            if let single = levels.single { answers.single[single.basis, default: 0] += 1 }
            for level in levels.model { answers.model[level.basis, default: 0] += level.count }
        }
        levels.single?.counter.increment()
        for level in levels.model { level.counter.increment(by: level.count) }
    }

    /// `kbtd_http_requests_total{route, status}`, for a caller that keeps it (a rendered answer).
    func requests(route: String, status: Int) -> Counter {
        counter("r|\(route)|\(status)") {
            registry.makeCounter(descriptor: Self.requests, labels: [("route", route), ("status", String(status))])
        }
    }

    private func answerCounter(_ route: String, _ basis: EstimateBasis) -> Counter {
        counter("h|\(route)|\(basis.rawValue)") {
            registry.makeCounter(descriptor: Self.heightAnswers, labels: [("route", route), ("basis", basis.rawValue)])
        }
    }

    /// Answers by basis since start (what the dashboard draws).
    var answersByBasis: BasisCounts {
        let (single, model) = answers.withLock { $0 }
        return BasisCounts(counts: single, modelEstimates: model, since: startedAt)
    }

    func samplesRejected(field: String, count: Int = 1) {
        counter("s|\(field)") { registry.makeCounter(descriptor: Self.rejected, labels: [("field", field)]) }
            .increment(by: Int64(count))
    }

    private static var keysRefusedName: MetricNameDescriptor {
        name("keys_refused", unit: "total", "Samples rejected because their new key passed a cap (by cap)")
    }

    func keysRefused(_ refusal: KeyRefusal, count: Int) {
        counter("k|\(refusal.rawValue)") {
            registry.makeCounter(descriptor: Self.keysRefusedName, labels: [("cap", refusal.rawValue)])
        }.increment(by: Int64(count))
    }

    /// Prometheus text exposition format.
    func exposition() -> [UInt8] {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }
}
