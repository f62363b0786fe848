import Prometheus

/// The counters `/metrics` exposes, on a registry of the daemon's own (not the
/// process-wide bootstrap, so tests and embedders can run several daemons).
public final class ServerMetrics: Sendable {
    public let registry = PrometheusCollectorRegistry()
    let queueDepth: Gauge
    let commitSeconds: ValueHistogram
    let commitBatches: ValueHistogram
    let samplesAccepted: Counter

    init() {
        queueDepth = registry.makeGauge(name: "kbtd_write_queue_depth", help: "Batches waiting for a commit")
        commitSeconds = registry.makeValueHistogram(
            name: "kbtd_commit_seconds", buckets: [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
            help: "Time to commit one group of batches (including fsync)")
        commitBatches = registry.makeValueHistogram(
            name: "kbtd_commit_batches", buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
            help: "Batches per group commit")
        samplesAccepted = registry.makeCounter(name: "kbtd_samples_accepted_total", help: "Samples stored")
    }

    func request(route: String, status: Int) {
        registry.makeCounter(name: "kbtd_http_requests_total", labels: [("route", route), ("status", String(status))],
                             help: "HTTP requests by route and status").increment()
    }

    func batch(_ outcome: String) {
        registry.makeCounter(name: "kbtd_batches_total", labels: [("outcome", outcome)],
                             help: "Ingested batches by outcome (stored, duplicate, rejected, unavailable)").increment()
    }

    func samplesRejected(field: String, count: Int = 1) {
        registry.makeCounter(name: "kbtd_samples_rejected_total", labels: [("field", field)],
                             help: "Rejected samples by the field at fault").increment(by: Int64(count))
    }

    /// Prometheus text exposition format.
    func exposition() -> [UInt8] {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return buffer
    }
}
