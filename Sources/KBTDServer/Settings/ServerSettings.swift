import KBTDCore
import Logging

/// A TCP address to listen on.
public struct ListenAddress: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    /// `tls`, `plain`, `proxy_protocol` after the address (ListenerOptions.swift).
    public var options = ListenerOptions()

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT`, `[V6]:PORT` or `:PORT` (all interfaces).
    public init?(parsing text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
              (0...65_535).contains(port) else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        self.init(host: host.isEmpty ? "0.0.0.0" : host, port: port)
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// Which peers are trusted: their batches are not capped per source and
/// satisfy `min_sources` alone (the operator's own tools: kbtd-fleet, relays).
public enum TrustedPeers: String, Sendable, Equatable, CaseIterable {
    /// The Unix socket and loopback.
    case local
    /// Only the Unix socket.
    case unix
    /// Nobody.
    case none
}

/// Everything `kbtd serve` can be told, with the defaults docs/command-line.md gives.
/// The command line layers flags, `KBTD_*` variables and the config file over these.
public struct ServerSettings: Sendable, Equatable {
    public var listen: [ListenAddress] = [ListenAddress(host: "127.0.0.1", port: 8420)]
    public var unixSocket: String?
    public var database = "kbtd.sqlite"
    public var limits = Limits()
    public var estimator = EstimatorSettings()
    /// `Cache-Control: max-age` of height answers, seconds.
    public var cacheMaxAge = 3600
    /// Bytes of rendered height answers each of the two answer caches holds (the live index's
    /// answers, `LiveHeights`; and the whole HTTP answers the router and the fast path send,
    /// `RenderedAnswers`); past it a cache starts over.
    public var answerCacheBytes = 16 << 20
    /// How long seen batch ids are remembered, days.
    public var batchRetentionDays = 7.0
    /// Seconds between SIGTERM and closing the listeners, during which `/readyz` answers 503 and
    /// everything else is served as before: a load balancer polling readiness stops sending first.
    public var shutdownDelaySeconds = 0
    public var logLevel: Logger.Level = .info
    /// Lets `/metrics` and `/v1/stats` answer non-local peers that send it as a bearer token.
    public var adminToken: String?
    /// Peers whose batches count in full for the estimator (see `SourcePolicy`).
    public var trustedPeers: TrustedPeers = .local
    /// Votes one untrusted source may add per key and height bin per day.
    public var maxVotesPerSource = 5
    /// When not empty, `POST /v1/batches` needs `Authorization: Bearer` one of these (else 401).
    public var ingestTokens: [String] = []
    /// (key, bin) entries one untrusted source may open in the vote ledger per day.
    public var maxVoteEntriesPerSource = 20_000
    /// Caps on the aggregation keys clients can create.
    public var keys = KeyLimits()
    /// `keys` with the reserve's groups set from the estimator's `min_sources`.
    var keyLimits: KeyLimits {
        var limits = keys
        limits.reserveGroups = estimator.minSources
        return limits
    }
    /// Most keys the in-memory index holds (about 1.7 KB each, at most about 4 KB when every histogram is full).
    public var maxIndexedKeys = 50_000
    /// Days a key no trusted peer and fewer than `min_sources` networks reported is kept (0: forever).
    public var unconfirmedKeyRetentionDays = 30.0
    /// Days a client network's keyed hash is kept for a key after the network last reported it;
    /// then it is replaced by a random identifier (the key keeps its count of sources).
    public var sourceRetentionDays = 30.0
    /// The file holding the secret key client networks are hashed under (nil: `source.key`
    /// beside the database; see `SourceKeyFile`).
    public var sourceKeyFile: String?
    /// The key itself, from `KBTD_SOURCE_KEY` (not a config-file setting: the key stays out of config files).
    public var sourceKey: SourceKey?
    /// Days a key without trusted data is kept after it was last reported, in the index or not (0: forever).
    public var idleKeyRetentionDays = 60.0
    /// Permissions of the Unix socket.
    public var unixSocketMode: UInt32 = 0o660
    /// Permissions of a database file kbtd creates (its WAL and shared-memory files follow).
    public var databaseMode: UInt32 = 0o600
    /// Write-ahead log size kbtd truncates back to (SQLite's `journal_size_limit`, and a
    /// truncating checkpoint once no reader holds the log).
    public var maxWALBytes: Int64 = 64 << 20
    /// PEM certificate chain and private key; with both, TCP listeners speak TLS and HTTP/2 (Transport/TLSCredentials.swift).
    public var tlsCertificate: String?
    public var tlsKey: String?
    /// The key-exchange groups TLS handshakes may use, in the server's order of preference.
    public var tlsGroups = TLSGroup.defaults
    /// Proxies whose PROXY header or forwarding header names the real client (Transport/ClientAddress.swift).
    public var trustedProxies: [IPNetwork] = []
    /// Which forwarding header a trusted proxy's requests carry the client in.
    public var forwardedHeader: ForwardedHeader = .xForwardedFor
    /// Every TCP listener expects a PROXY protocol header from trusted proxies.
    public var proxyProtocol = false
    /// When `database` is a PostgreSQL URL.
    public var postgres = PostgresSettings()

    public init() {}

    /// Request limits (all reloadable).
    public struct Limits: Sendable, Equatable {
        /// Largest body on the wire.
        public var maxCompressedBytes = 1 << 20
        /// Largest body after inflating.
        public var maxDecompressedBytes = 8 << 20
        /// What every request body in flight may hold together (`BodyBudget`): a quarter per client
        /// network, half per network group.
        public var bodyBudgetBytes = 64 << 20
        public var maxSamplesPerBatch = 10_000
        /// Batches waiting for a commit before ingest answers 503.
        public var writeQueueCapacity = 1024
        /// Most batches one transaction holds.
        public var maxBatchesPerCommit = 1024
        /// `Retry-After` on 503 and 429, seconds.
        public var retryAfterSeconds = 1
        /// Idle keep-alive connections are closed after this many seconds.
        public var idleTimeoutSeconds = 60
        /// A new connection must send a complete request head within this many seconds.
        public var headerTimeoutSeconds = 10
        /// Once the head is in, the whole body must arrive within this many seconds.
        public var bodyTimeoutSeconds = 30
        /// Concurrent connections across all listeners; more are closed at once.
        public var maxConnections = 4096
        /// Concurrent TCP connections from one client address (IPv4 address, IPv6 /64);
        /// the Unix socket is exempt and has `maxConnections` of its own.
        public var maxConnectionsPerClient = 256
        /// Ingest token bucket per client address: batches per second (0: off) ...
        public var ingestRatePerSecond = 20.0
        /// ... and burst size.
        public var ingestBurst = 100.0
        /// Whether loopback and Unix-socket peers are rate limited too.
        public var rateLimitLocalPeers = false

        public init() {}
    }
}
