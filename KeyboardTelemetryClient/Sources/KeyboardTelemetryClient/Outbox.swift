import Foundation

/// Owns the on-disk queue and delivers it, oldest batch first, one request at
/// a time: 202 and 200-duplicate remove a batch, a final 4xx drops it (counted,
/// logged), everything else backs off (exponentially with jitter, or for as
/// long as `Retry-After` says) and tries the same bytes, same `batch_id`, again.
/// A batch whose samples are all older than `maxSampleAge` is dropped unsent.
/// The queue is read from disk when first needed, here, never on the caller's thread.
actor Outbox {
    private var queue: DiskBatchQueue?
    private let storage: StorageDirectory
    private let configuration: TelemetryConfiguration
    private let transport: any TelemetryTransport
    private let clock: any TelemetryClock
    private let counters: Locked<TelemetryCounters>
    private var logger: TelemetryLogger { configuration.logger }

    private var enabled = false
    private var stopped = false
    /// The background time ran out: nothing is sent until `enable()`.
    private var paused = false
    private var drainTask: Task<Void, Never>?
    private var backoffTask: Task<Void, Never>?
    private var consecutiveFailures = 0
    private var inFlight: QueuedBatch?
    /// The queue cap evicted the batch that is being sent: count it as evicted unless this attempt delivers it.
    private var inFlightEvicted = false
    private var waiters: [UUID: Waiter] = [:]

    private struct Waiter {
        var continuation: CheckedContinuation<Bool, Never>
        var timer: Task<Void, Never>?
        /// Answered false by the first failed attempt (`sendUntilEmptyOrFailed`).
        var endsOnFailure: Bool
    }

    init(configuration: TelemetryConfiguration, transport: any TelemetryTransport, clock: any TelemetryClock,
         counters: Locked<TelemetryCounters>, storage: StorageDirectory) {
        self.configuration = configuration
        self.transport = transport
        self.clock = clock
        self.counters = counters
        self.storage = storage
    }

    /// The queue, read from disk the first time; nil (logged) while the disk refuses.
    private func openQueue() -> DiskBatchQueue? {
        if let queue { return queue }
        do {
            try storage.prepare()
            queue = try DiskBatchQueue(directory: storage.appending("queue", isDirectory: true), fileSystem: storage.fileSystem,
                                       maxBatches: configuration.maxQueuedBatches, maxBytes: configuration.maxQueuedBytes,
                                       synchronousWrites: configuration.synchronousWrites, logger: logger)
        } catch {
            logger.log(.error, "cannot open the batch queue in \(storage.url.path): \(error)")
        }
        return queue
    }

    /// Batches on disk, including one being sent.
    func queuedBatchCount() -> Int { openQueue()?.batches.count ?? 0 }

    /// Encodes, compresses and persists a sealed batch, then delivers it when delivery is enabled.
    /// Samples older than `maxSampleAge` are dropped here and counted.
    func enqueue(id: UUID, device: TelemetryDevice, samples: [KeyboardSample]) {
        let now = clock.now()
        let fresh = samples.filter { !isExpired(seconds: $0.timestamp.timeIntervalSince1970, now: now) }
        if fresh.count < samples.count {
            let expired = samples.count - fresh.count
            counters.withLock { $0.samplesExpired += expired }
            logger.log(.info, "dropped \(expired) samples older than kbtd accepts")
        }
        guard !fresh.isEmpty else { return }
        let samples = fresh
        let body = Gzip.compress(UploadBody.json(batchID: id, device: device, samples: samples))
        let newest = samples.map(\.timestamp.timeIntervalSince1970).max() ?? 0
        let evicted: [QueuedBatch]
        do {
            guard var queue = openQueue() else { throw CocoaError(.fileWriteUnknown) }
            (_, evicted) = try queue.enqueue(id: id, sampleCount: samples.count,
                                             newestSample: Int64(min(max(newest, 0), 1e15).rounded(.down)), body: body)
            self.queue = queue
        } catch {
            // The disk is full or unwritable: the batch cannot be kept, so it is lost. Count it as evicted.
            logger.log(.error, "cannot write batch \(id.uuidString.lowercased()) (\(samples.count) samples) to the queue: \(error)")
            counters.withLock { $0.batchesEvicted += 1; $0.samplesEvicted += samples.count }
            return
        }
        counters.withLock { $0.batchesQueued += 1 }
        for batch in evicted {
            if batch.sequence == inFlight?.sequence {
                inFlightEvicted = true
            } else {
                counters.withLock { $0.batchesEvicted += 1; $0.samplesEvicted += batch.sampleCount }
            }
            logger.log(.warning, "queue over its cap: dropped the oldest batch \(batch.id.uuidString.lowercased()) (\(batch.sampleCount) samples)")
        }
        ensureDraining()
    }

    /// Starts delivering (what earlier runs left on disk, too), or resumes after `pause()`.
    func enable() {
        enabled = true
        paused = false
        _ = openQueue()
        ensureDraining()
    }

    /// Stops delivering: cancels a request in flight (its batch stays queued) and any backoff wait.
    func stop() {
        stopped = true
        halt()
    }

    /// The background time ran out: cancels a request in flight (its batch stays queued) and any
    /// backoff wait; nothing is sent until `enable()`.
    func pause() {
        paused = true
        halt()
    }

    private func halt() {
        drainTask?.cancel()
        backoffTask?.cancel()
        backoffTask = nil
        for id in Array(waiters.keys) { resumeWaiter(id, with: isIdle) }
    }

    /// True once the queue is empty and nothing is in flight; false when `timeout` (real seconds) passes first.
    func waitUntilEmpty(timeout: TimeInterval) async -> Bool {
        _ = openQueue()
        if isIdle { return true }
        if stopped { return false }
        let id = UUID()
        return await withCheckedContinuation { continuation in
            let timer = Task { [weak self] in
                try? await Task.sleep(nanoseconds: UInt64(max(0, min(timeout, 1e9)) * 1e9))
                guard !Task.isCancelled else { return }
                await self?.resumeWaiter(id, with: false)
            }
            waiters[id] = Waiter(continuation: continuation, timer: timer, endsOnFailure: false)
        }
    }

    /// True once the queue is empty; false at the first failed attempt, while delivery is not
    /// enabled or paused, or on `pause()`/`stop()`.
    func sendUntilEmptyOrFailed() async -> Bool {
        _ = openQueue()
        if isIdle { return true }
        guard enabled, !paused, !stopped else { return false }
        if backoffTask != nil { return false }  // already failed: waiting for the retry
        ensureDraining()
        return await withCheckedContinuation { continuation in
            waiters[UUID()] = Waiter(continuation: continuation, timer: nil, endsOnFailure: true)
        }
    }

    private var isIdle: Bool { (queue?.isEmpty ?? true) && inFlight == nil }

    private func isExpired(seconds: TimeInterval, now: Date) -> Bool {
        now.timeIntervalSince1970 - seconds > configuration.maxSampleAge
    }

    private func resumeWaiter(_ id: UUID, with value: Bool) {
        guard let waiter = waiters.removeValue(forKey: id) else { return }
        waiter.timer?.cancel()
        waiter.continuation.resume(returning: value)
    }

    private func notifyFailure() {
        for (id, waiter) in waiters where waiter.endsOnFailure { resumeWaiter(id, with: false) }
    }

    private func notifyIfIdle() {
        guard isIdle else { return }
        for id in Array(waiters.keys) { resumeWaiter(id, with: true) }
    }

    private func ensureDraining() {
        guard enabled, !paused, !stopped, drainTask == nil, backoffTask == nil, queue?.isEmpty == false else { return }
        drainTask = Task { await self.drain() }
    }

    private func drain() async {
        defer {
            drainTask = nil
            notifyIfIdle()
            ensureDraining()  // resumed (`enable()`) while this cancelled pass was ending
        }
        while !stopped, !paused, !Task.isCancelled, backoffTask == nil, let batch = queue?.oldest {
            if let newest = batch.newestSample, isExpired(seconds: TimeInterval(newest), now: clock.now()) {
                queue?.remove(batch)
                counters.withLock { $0.batchesExpired += 1; $0.samplesExpired += batch.sampleCount }
                logger.log(.info, "batch \(batch.id.uuidString.lowercased()) waited past kbtd's age limit; dropped it unsent")
                continue
            }
            let body: Data
            do {
                body = try storage.fileSystem.readFile(at: batch.file)
            } catch {
                logger.log(.error, "cannot read queued batch \(batch.file.lastPathComponent): \(error); dropping it")
                queue?.remove(batch)
                counters.withLock { $0.batchesDropped += 1; $0.samplesDropped += batch.sampleCount }
                continue
            }
            inFlight = batch
            inFlightEvicted = false
            let outcome: DeliveryOutcome
            do {
                let response = try await transport.send(request(body, file: batch.file))
                outcome = DeliveryPolicy.outcome(of: response, now: clock.now())
            } catch {
                inFlight = nil
                if Task.isCancelled || stopped || paused { return }  // shutting down or suspended: the batch stays on disk
                outcome = .retry(reason: "\(error)", retryAfter: nil)
            }
            inFlight = nil
            settle(batch, outcome)
        }
    }

    private func request(_ body: Data, file: URL) -> TransportRequest {
        var headers = ["Content-Type": "application/json", "Content-Encoding": "gzip",
                       "User-Agent": "KeyboardTelemetryClient/1.0"]
        if let token = configuration.authorizationToken { headers["Authorization"] = "Bearer \(token)" }
        return TransportRequest(method: "POST", url: configuration.baseURL.appendingPathComponent("v1/batches"),
                                headers: headers, body: body, bodyFile: file, timeout: configuration.requestTimeout)
    }

    private func settle(_ batch: QueuedBatch, _ outcome: DeliveryOutcome) {
        let id = batch.id.uuidString.lowercased()
        switch outcome {
        case .acknowledged(let accepted, let rejected):
            queue?.remove(batch)
            consecutiveFailures = 0
            counters.withLock { $0.batchesAcknowledged += 1; $0.samplesAccepted += accepted; $0.samplesRejected += rejected }
            if rejected > 0 { logger.log(.info, "batch \(id): kbtd rejected \(rejected) of \(batch.sampleCount) samples") }
        case .duplicate:
            queue?.remove(batch)
            consecutiveFailures = 0
            counters.withLock { $0.batchesDuplicate += 1 }
            logger.log(.debug, "batch \(id) was already stored (a retry after a lost answer)")
        case .final(let status, let reason):
            queue?.remove(batch)
            counters.withLock { $0.batchesDropped += 1; $0.samplesDropped += batch.sampleCount }
            logger.log(.error, "kbtd refused batch \(id) (\(batch.sampleCount) samples) with HTTP \(status): \(reason); dropped it")
        case .retry(let reason, let retryAfter):
            if inFlightEvicted {
                counters.withLock { $0.batchesEvicted += 1; $0.samplesEvicted += batch.sampleCount }
            }
            consecutiveFailures += 1
            let delay: TimeInterval
            if let retryAfter {
                delay = DeliveryPolicy.retryAfterDelay(retryAfter, cap: configuration.maxRetryAfter, unit: Double.random(in: 0..<1))
                counters.withLock { $0.failedAttempts += 1; $0.retryAfterWaits += 1 }
            } else {
                delay = DeliveryPolicy.backoff(failures: consecutiveFailures, base: configuration.backoffBase,
                                               max: configuration.backoffMax, unit: Double.random(in: 0..<1))
                counters.withLock { $0.failedAttempts += 1 }
            }
            logger.log(consecutiveFailures > 3 ? .warning : .info,
                       "sending batch \(id) failed (\(reason)); retrying in \(String(format: "%.2f", delay)) s")
            startBackoff(delay)
            notifyFailure()
        }
        inFlightEvicted = false
    }

    private func startBackoff(_ delay: TimeInterval) {
        backoffTask = Task { [clock] in
            do {
                try await clock.sleep(for: delay)
            } catch {
                return  // cancelled by stop()
            }
            self.endBackoff()
        }
    }

    private func endBackoff() {
        backoffTask = nil
        ensureDraining()
    }
}
