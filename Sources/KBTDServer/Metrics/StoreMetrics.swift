import Prometheus

/// The store's series on the daemon's registry: `kbtd_store_info{kind}` always;
/// on PostgreSQL also the pool's gauges and the index catch-up's lag and count
/// (docs/monitoring.md). Gauges are set when `/metrics` is read
/// (`OperationsRoutes.prometheus`); the catch-up counts each commit it applies.
struct StoreMetrics: Sendable {
    /// The pool's and the catch-up's series (nil on SQLite: not exported there).
    struct Postgres: Sendable {
        let poolLeased: Gauge
        let poolSize: Gauge
        let up: Gauge
        let indexLag: Gauge
        let catchUpCommits: Counter
    }

    let postgres: Postgres?

    init(registry: PrometheusCollectorRegistry, postgres: Bool) {
        let kind = postgres ? "postgresql" : "sqlite"
        registry.makeGauge(descriptor: ServerMetrics.name("store_info", "The store kind (sqlite or postgresql)."), labels: [("kind", kind)])
            .set(Int64(1))
        guard postgres else {
            self.postgres = nil
            return
        }
        self.postgres = Postgres(
            poolLeased: registry.makeGauge(descriptor: ServerMetrics.name("postgres_pool_leased_connections", "Pool connections in use.")),
            poolSize: registry.makeGauge(descriptor: ServerMetrics.name("postgres_pool_size", "Most connections the pool opens.")),
            up: registry.makeGauge(descriptor: ServerMetrics.name("postgres_up", "1 when the last pool operation succeeded.")),
            indexLag: registry.makeGauge(descriptor: ServerMetrics.name("index_lag", unit: "seconds",
                                                                "Seconds since the last successful read of other nodes' commits.")),
            catchUpCommits: registry.makeCounter(descriptor: ServerMetrics.name("index_catch_up_commits", unit: "total",
                                                                       "Other nodes' commits applied to this node's index.")))
    }
}
