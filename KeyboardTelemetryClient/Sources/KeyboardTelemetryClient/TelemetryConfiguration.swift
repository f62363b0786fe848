import Foundation

/// Everything a client can be tuned by. The defaults are what an app should ship with.
public struct TelemetryConfiguration: Sendable {
    /// kbtd's base URL, e.g. `https://kbtd.example.com` (the client appends `/v1/batches` and `/v1/heights`).
    public var baseURL: URL
    /// Where the batch queue and the heights cache live; created when missing.
    /// One directory per client: two clients must not share one.
    public var storageDirectory: URL
    /// `Authorization: Bearer` token, when kbtd is configured with ingest tokens.
    public var authorizationToken: String?

    /// A batch is sealed, and sent, when it holds this many samples (1...10,000; kbtd's limit is 10,000).
    /// Otherwise samples wait in memory for `flush()` or `sendInBackground()` (the app leaving the
    /// foreground), and what is queued leaves at `start()`: the radio is not woken while the user types.
    public var maxBatchSamples = 100

    /// Samples older than this many seconds are dropped and counted (`samplesExpired`) instead of sent,
    /// when a batch is sealed and again before a queued batch is sent: kbtd refuses samples older than
    /// 30 days (`.infinity` sends everything and leaves the judging to kbtd).
    public var maxSampleAge: TimeInterval = 30 * 86_400

    /// The on-disk queue keeps at most this many batches; past it the oldest are dropped (and counted).
    public var maxQueuedBatches = 500
    /// ...and at most this many bytes of compressed batches.
    public var maxQueuedBytes = 4 * 1024 * 1024
    /// `fsync` each batch file before it is renamed into the queue. Turn off only for scratch queues (simulators).
    public var synchronousWrites = true
    /// Exclude `storageDirectory` (the queue and the heights cache) from iCloud and iTunes backups
    /// (`isExcludedFromBackup`, Apple platforms): telemetry on its way out has no place in a backup.
    public var excludeFromBackup = true

    /// What networks uploads and height fetches may use (`URLSessionTransport`); see `NetworkPolicy`.
    public var network = NetworkPolicy()
    /// Apple platforms: with an identifier, batches are uploaded from their queue files through a
    /// background `URLSession` of that identifier (`BackgroundUploadTransport`), so an upload the
    /// system has begun finishes while the app is suspended. Nil (the default): the same session as
    /// height fetches. Ignored when a transport is passed to the client.
    public var backgroundSessionIdentifier: String?

    /// First retry delay after a failed attempt, seconds; doubles with each further failure.
    public var backoffBase: TimeInterval = 2
    /// The longest backoff delay, seconds.
    public var backoffMax: TimeInterval = 600
    /// The longest `Retry-After` the client obeys, seconds (a misconfigured proxy must not park the queue for a week).
    public var maxRetryAfter: TimeInterval = 3600
    /// Per-request timeout, seconds.
    public var requestTimeout: TimeInterval = 30

    /// `GET /v1/heights` is fetched at most this often, seconds (default 12 hours).
    public var heightsRefreshInterval: TimeInterval = 12 * 3600
    /// After a failed heights fetch, the next attempt waits at least this long, seconds.
    public var heightsRetryInterval: TimeInterval = 15 * 60
    /// The answer of last resort for portrait, points (the height apps hard-code today).
    public var defaultPortraitHeight: Double = 335
    /// The answer of last resort for landscape, points.
    public var defaultLandscapeHeight: Double = 209

    /// The screen in points, portrait (`393x852`), sent with every batch and height query; nil keeps
    /// `TelemetryDevice.screen`. On iOS: `TelemetryConfiguration.screenSize(of: windowScene)`.
    public var screen: String?
    /// A table written by `kbtd export` and shipped in the app bundle: answers before kbtd has
    /// answered (a fresh install's first keyboard). Order: own measurement, kbtd's cached answer,
    /// this table, the configured default.
    public var bundledHeights: BundledHeightTable?

    /// Where log messages go.
    public var logger: TelemetryLogger = .standardError

    /// The defaults, for kbtd at `baseURL`, keeping state in `storageDirectory`.
    public init(baseURL: URL, storageDirectory: URL) {
        self.baseURL = baseURL
        self.storageDirectory = storageDirectory
    }

    /// `Application Support/KeyboardTelemetry` (on Linux `~/.local/share/KeyboardTelemetry`).
    public static func defaultStorageDirectory() -> URL {
        let base = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? FileManager.default.temporaryDirectory
        return base.appendingPathComponent("KeyboardTelemetry", isDirectory: true)
    }

    /// The configured default for an orientation.
    func defaultHeight(_ orientation: KeyboardOrientation) -> Double {
        orientation == .portrait ? defaultPortraitHeight : defaultLandscapeHeight
    }

    /// `maxBatchSamples` clamped to what kbtd accepts.
    var batchSampleLimit: Int { min(max(maxBatchSamples, 1), 10_000) }
}
