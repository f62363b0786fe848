import Foundation

/// Records keyboard measurements, delivers them to kbtd in gzip batches
/// through a bounded on-disk queue, and answers "how tall will the keyboard
/// be?" at once from a local cache.
///
/// `init`, `record`, `keyboardRequested`, `estimatedHeight` and `shouldPrewarmKeyboard` are
/// synchronous and cheap (a lock and an array append or dictionary lookup) and never touch a file:
/// call them from the main thread. Everything else (loading the cache and the queue, encoding,
/// compression, disk, network) runs on the client's own tasks. One client per storage directory.
public final class KeyboardTelemetryClient: Sendable {
    /// The device every batch reports.
    public let device: TelemetryDevice
    /// The settings the client was created with.
    public let configuration: TelemetryConfiguration

    private let clock: any TelemetryClock
    private let recorder = Locked(SampleRecorder())
    private let counterState = Locked(TelemetryCounters())
    private let outbox: Outbox
    private let heightCache: HeightCache
    private let refresher: HeightsRefresher
    private let jobs: AsyncStream<PipelineJob>.Continuation
    private let pipeline: Task<Void, Never>
    private let heightsTask = Locked<Task<Void, Never>?>(nil)

    /// A client for kbtd at `configuration.baseURL`, keeping its state in `configuration.storageDirectory`.
    /// Returns at once and touches no file: the heights cache loads on the client's own task right
    /// after (until then `estimatedHeight` answers from the bundled table and the defaults), the queue
    /// when first needed. Nothing is sent before `start()`.
    ///
    /// - Parameters:
    ///   - transport: how requests are sent; nil (the default) builds a `URLSessionTransport` with
    ///     `configuration.network` (and a `BackgroundUploadTransport` for batches when
    ///     `configuration.backgroundSessionIdentifier` is set).
    ///   - clock: where time comes from (tests move it by hand).
    ///   - fileSystem: every file operation the client makes.
    public init(device: TelemetryDevice, configuration: TelemetryConfiguration,
                transport: (any TelemetryTransport)? = nil, clock: any TelemetryClock = SystemClock(),
                fileSystem: any TelemetryFileSystem = LocalFileSystem()) {
        let device = configuration.screen.map { screen in
            var withScreen = device
            withScreen.screen = screen
            return withScreen
        } ?? device
        self.device = device
        self.configuration = configuration
        self.clock = clock
        let requests = transport ?? URLSessionTransport(network: configuration.network)
        var uploads = requests
        if transport == nil, let identifier = configuration.backgroundSessionIdentifier {
            uploads = BackgroundUploadTransport(identifier: identifier, network: configuration.network, fallback: requests)
        }
        let storage = StorageDirectory(configuration: configuration, fileSystem: fileSystem)
        let outbox = Outbox(configuration: configuration, transport: uploads, clock: clock, counters: counterState, storage: storage)
        let cache = HeightCache(storage: storage, device: device, logger: configuration.logger)
        let (stream, jobs) = AsyncStream.makeStream(of: PipelineJob.self)
        self.outbox = outbox
        self.heightCache = cache
        self.jobs = jobs
        refresher = HeightsRefresher(cache: cache, device: device, configuration: configuration, transport: requests,
                                     clock: clock, counters: counterState, save: { jobs.yield(.saveHeights) })
        let logger = configuration.logger
        pipeline = Task {
            for await job in stream {
                switch job {
                case .loadHeights:
                    cache.loadIfNeeded()
                case .seal(let id, let samples):
                    await outbox.enqueue(id: id, device: device, samples: samples)
                case .saveHeights:
                    do { try cache.save() } catch { logger.log(.warning, "cannot write the heights cache: \(error)") }
                case .barrier(let continuation):
                    continuation.resume()
                }
            }
        }
        jobs.yield(.loadHeights)
    }

    deinit {
        jobs.finish()
        heightsTask.withLock { $0?.cancel() }
        // Without this, a backoff loop would outlive the client. Queued batches stay on disk.
        let outbox = outbox
        Task { await outbox.stop() }
    }

    /// Returns once the heights cache from the last launch is loaded (it loads right after `init`).
    /// Apps need not wait: until then `estimatedHeight` answers from the bundled table and the defaults.
    public func waitUntilLoaded() async {
        await barrier()
    }

    // MARK: Recording

    /// Records one keyboard notification. Samples with a non-finite number are discarded (and counted);
    /// everything else goes to kbtd, which judges each sample. A batch is sealed, and sent, when it holds
    /// `maxBatchSamples` samples; otherwise samples wait for `flush()` or `sendInBackground()`.
    public func record(_ sample: KeyboardSample) {
        counterState.withLock { $0.samplesRecorded += 1 }
        guard sample.isEncodable else {
            counterState.withLock { $0.samplesDiscarded += 1 }
            configuration.logger.log(.warning, "discarding a sample with a non-finite number")
            return
        }
        let now = clock.now()
        var sample = sample
        let limit = configuration.batchSampleLimit
        recorder.withLock { recorder in
            recorder.annotateFirstShow(&sample, now: now)
            recorder.pending.append(sample)
            if recorder.pending.count >= limit { recorder.seal(into: jobs) }
        }
        if heightCache.learn(sample) { jobs.yield(.saveHeights) }
    }

    /// Call right before making a text field first responder for the first time after launch;
    /// the first `show` recorded afterwards carries `cold_start_ms` (the time in between) and
    /// `preloaded`. Calls after the first show are ignored.
    public func keyboardRequested(preloaded: Bool) {
        let now = clock.now()
        recorder.withLock { recorder in
            guard !recorder.firstShowSeen, recorder.requestedAt == nil else { return }
            recorder.requestedAt = now
            recorder.requestedPreloaded = preloaded
        }
    }

    /// Samples recorded but not yet sealed into a batch.
    public var pendingSampleCount: Int { recorder.withLock { $0.pending.count } }

    // MARK: Delivery

    /// Call at launch and whenever the app returns to the foreground: sends what is queued (including
    /// batches an earlier run left) and refreshes heights when due. Resumes delivery after
    /// `backgroundTimeExpired()`. Nothing is sent before the first call.
    public func start() {
        let refresher = refresher, outbox = outbox
        heightsTask.withLock { task in
            task = Task { _ = await refresher.refresh(force: false) }
        }
        Task { await outbox.enable() }
    }

    /// Seals the pending samples into a batch now and returns once every sealed batch is on disk;
    /// after `start()` they are sent at once.
    public func flush() async {
        recorder.withLock { $0.seal(into: jobs) }
        await barrier()
    }

    /// The app is leaving the foreground: seals and persists the pending samples and sends the queue.
    /// True once the queue is empty; false as soon as an attempt fails (the batch waits for its retry,
    /// or the next launch), when delivery has not been started, or when `backgroundTimeExpired()` is called.
    /// Wire it to a background task (`beginBackgroundTask(expirationHandler:)`; `sendInBackground(application:)`
    /// on iOS does it for you).
    public func sendInBackground() async -> Bool {
        await flush()
        return await outbox.sendUntilEmptyOrFailed()
    }

    /// Call from the background task's expiration handler: cancels the request in flight (its batch stays
    /// queued, to be sent again under the same `batch_id`) and pauses delivery until the next `start()`.
    /// Returns at once; `sendInBackground()` then returns false.
    public func backgroundTimeExpired() {
        let outbox = outbox
        Task { await outbox.pause() }
    }

    /// Waits until every queued batch has been delivered or dropped (delivery runs after `start()`).
    /// False when `timeout` (seconds of real time) passes first or the client was shut down with batches left.
    public func waitForDelivery(timeout: TimeInterval) async -> Bool {
        await barrier()
        return await outbox.waitUntilEmpty(timeout: timeout)
    }

    /// Batches in the on-disk queue.
    public func queuedBatchCount() async -> Int {
        await barrier()
        return await outbox.queuedBatchCount()
    }

    /// Seals and persists pending samples, stops background work and cancels a request in flight
    /// (its batch stays queued for the next launch). The client records nothing afterwards.
    public func shutdown() async {
        heightsTask.withLock { task in
            task?.cancel()
            task = nil
        }
        await flush()
        await outbox.stop()
        jobs.finish()
        await pipeline.value
    }

    /// What this client has done so far.
    public var counters: TelemetryCounters { counterState.withLock { $0 } }

    private func barrier() async {
        await withCheckedContinuation { continuation in
            if case .terminated = jobs.yield(.barrier(continuation)) { continuation.resume() }
        }
    }

    // MARK: Heights

    /// The keyboard height to lay out for before the keyboard has shown, in points, without any
    /// input accessory view: this device's last measurement for the language, orientation and type,
    /// else kbtd's answer, else the bundled table (`bundledHeights`), else the configured default.
    /// Never waits for the network or the disk.
    public func estimatedHeight(language: String, orientation: KeyboardOrientation,
                                keyboardType: KeyboardType = .default) -> Double {
        heightEstimate(language: language, orientation: orientation, keyboardType: keyboardType).height
    }

    /// `estimatedHeight` with where the answer came from.
    public func heightEstimate(language: String, orientation: KeyboardOrientation,
                               keyboardType: KeyboardType = .default) -> KeyboardHeightEstimate {
        heightCache.estimate(language: language, orientation: orientation, keyboardType: keyboardType,
                             bundled: configuration.bundledHeights.flatMap {
                                 $0.height(model: device.model, os: device.os, screen: device.screen, language: language,
                                           orientation: orientation, keyboardType: keyboardType)
                             },
                             default: configuration.defaultHeight(orientation))
    }

    /// The keyboard's first-show latency on this device's model and OS major, without and with
    /// pre-warming, as kbtd measured it across phones: its last answer, else the bundled table; nil when
    /// neither knows. Never waits.
    public func keyboardColdStart() -> KeyboardColdStart? {
        heightCache.coldStart ?? configuration.bundledHeights?.coldStart(model: device.model, os: device.os)
    }

    /// Whether pre-warming the keyboard at launch pays on this phone: true when both latencies are
    /// known for this model and OS major and pre-warming saves more than `minimumSavingMs` at the
    /// median; false when either is unknown.
    public func shouldPrewarmKeyboard(minimumSavingMs: Double = 50) -> Bool {
        keyboardColdStart()?.medianSavingMs.map { $0 > minimumSavingMs } ?? false
    }

    /// Fetches `GET /v1/heights` when due (at most every `heightsRefreshInterval`), or now with
    /// `force`, revalidating with `If-None-Match`. `start()` calls it; apps rarely need to.
    @discardableResult
    public func refreshHeights(force: Bool = false) async -> HeightsRefreshResult {
        await refresher.refresh(force: force)
    }
}
