import Foundation

/// Records keyboard measurements, delivers them to kbtd in gzip batches
/// through a bounded on-disk queue, and answers "how tall will the keyboard
/// be?" at once from a local cache.
///
/// `record`, `keyboardRequested` and `estimatedHeight` are synchronous and
/// cheap (a lock and an array append or dictionary lookup): call them from
/// the main thread. Everything else (encoding, compression, disk, network)
/// runs in the background. One client per storage directory.
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
    private let background = Locked(BackgroundTasks())

    private struct BackgroundTasks {
        var started = false
        var ageTimer: Task<Void, Never>?
        var heights: Task<Void, Never>?
    }

    /// Opens the queue and heights cache in `configuration.storageDirectory` (batches an earlier run
    /// left there are delivered after `start()`). No network I/O happens before `start()`.
    public init(device: TelemetryDevice, configuration: TelemetryConfiguration,
                transport: any TelemetryTransport = URLSessionTransport(), clock: any TelemetryClock = SystemClock()) throws {
        let device = configuration.screen.map { screen in
            var withScreen = device
            withScreen.screen = screen
            return withScreen
        } ?? device
        self.device = device
        self.configuration = configuration
        self.clock = clock
        try FileManager.default.createDirectory(at: configuration.storageDirectory, withIntermediateDirectories: true)
        let outbox = try Outbox(configuration: configuration, transport: transport, clock: clock, counters: counterState)
        let cache = HeightCache(file: configuration.storageDirectory.appendingPathComponent("heights.json"),
                                device: device, logger: configuration.logger)
        let (stream, jobs) = AsyncStream.makeStream(of: PipelineJob.self)
        self.outbox = outbox
        self.heightCache = cache
        self.jobs = jobs
        refresher = HeightsRefresher(cache: cache, device: device, configuration: configuration, transport: transport,
                                     clock: clock, counters: counterState, save: { jobs.yield(.saveHeights) })
        let logger = configuration.logger
        pipeline = Task {
            for await job in stream {
                switch job {
                case .seal(let id, let samples):
                    await outbox.enqueue(id: id, device: device, samples: samples)
                case .saveHeights:
                    do { try cache.save() } catch { logger.log(.warning, "cannot write the heights cache: \(error)") }
                case .barrier(let continuation):
                    continuation.resume()
                }
            }
        }
    }

    deinit {
        jobs.finish()
        background.withLock { tasks in
            tasks.ageTimer?.cancel()
            tasks.heights?.cancel()
        }
        // Without this, a backoff loop would outlive the client. Queued batches stay on disk.
        let outbox = outbox
        Task { await outbox.stop() }
    }

    // MARK: Recording

    /// Records one keyboard notification. Samples with a non-finite number are discarded (and counted);
    /// everything else goes to kbtd, which judges each sample. Seals a batch at `maxBatchSamples`
    /// samples or when the oldest pending sample is `maxBatchAge` old.
    public func record(_ sample: KeyboardSample) {
        counterState.withLock { $0.samplesRecorded += 1 }
        guard sample.isEncodable else {
            counterState.withLock { $0.samplesDiscarded += 1 }
            configuration.logger.log(.warning, "discarding a sample with a non-finite number")
            return
        }
        let now = clock.now()
        var sample = sample
        let limit = configuration.batchSampleLimit, maxAge = configuration.maxBatchAge
        recorder.withLock { recorder in
            recorder.annotateFirstShow(&sample, now: now)
            recorder.pending.append(sample)
            if recorder.pendingSince == nil { recorder.pendingSince = now }
            if recorder.pending.count >= limit || (recorder.secondsUntilDue(maxAge: maxAge, now: now) ?? 1) <= 0 {
                recorder.seal(into: jobs)
            }
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

    /// Starts the background work: delivering the queue (including batches an earlier run left),
    /// sealing batches by age, and refreshing heights when due. Idempotent.
    public func start() {
        let outbox = outbox, refresher = refresher, recorder = recorder, jobs = jobs, clock = clock
        let maxAge = max(configuration.maxBatchAge, 0.01)
        background.withLock { tasks in
            guard !tasks.started else { return }
            tasks.started = true
            if maxAge.isFinite { tasks.ageTimer = Task {
                while !Task.isCancelled {
                    let wait = recorder.withLock { $0.secondsUntilDue(maxAge: maxAge, now: clock.now()) } ?? maxAge
                    if wait > 0 {
                        do { try await clock.sleep(for: max(wait, 0.01)) } catch { return }
                    }
                    let now = clock.now()
                    recorder.withLock { recorder in
                        if let due = recorder.secondsUntilDue(maxAge: maxAge, now: now), due <= 0 { recorder.seal(into: jobs) }
                    }
                }
            } }
            tasks.heights = Task { _ = await refresher.refresh(force: false) }
        }
        Task { await outbox.enable() }
    }

    /// Seals the pending samples into a batch now and returns once every sealed batch is on disk
    /// (delivery continues in the background). Call it when the app moves to the background.
    public func flush() async {
        recorder.withLock { $0.seal(into: jobs) }
        await barrier()
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
        return await outbox.queuedBatchCount
    }

    /// Seals and persists pending samples, stops background work and cancels a request in flight
    /// (its batch stays queued for the next launch). The client records nothing afterwards.
    public func shutdown() async {
        let tasks = background.withLock { tasks -> [Task<Void, Never>] in
            defer { tasks.ageTimer = nil; tasks.heights = nil }
            return [tasks.ageTimer, tasks.heights].compactMap { $0 }
        }
        for task in tasks { task.cancel() }
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
    /// Never waits for the network.
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

    /// Fetches `GET /v1/heights` when due (at most every `heightsRefreshInterval`), or now with
    /// `force`, revalidating with `If-None-Match`. `start()` calls it; apps rarely need to.
    @discardableResult
    public func refreshHeights(force: Bool = false) async -> HeightsRefreshResult {
        await refresher.refresh(force: force)
    }
}
