import Foundation

/// Owns the on-disk queue and delivers it, oldest batch first, one request at
/// a time: 202 and 200-duplicate remove a batch, a final 4xx drops it (counted,
/// logged), everything else backs off (exponentially with jitter, or for as
/// long as `Retry-After` says) and tries the same bytes, same `batch_id`, again.
actor Outbox {
    private var queue: DiskBatchQueue
    private let configuration: TelemetryConfiguration
    private let transport: any TelemetryTransport
    private let clock: any TelemetryClock
    private let counters: Locked<TelemetryCounters>
    private var logger: TelemetryLogger { configuration.logger }

    private var enabled = false
    private var stopped = false
    private var drainTask: Task<Void, Never>?
    private var backoffTask: Task<Void, Never>?
    private var consecutiveFailures = 0
    private var inFlight: QueuedBatch?
    /// The queue cap evicted the batch that is being sent: count it as evicted unless this attempt delivers it.
    private var inFlightEvicted = false
    private var waiters: [UUID: (continuation: CheckedContinuation<Bool, Never>, timer: Task<Void, Never>)] = [:]

    init(configuration: TelemetryConfiguration, transport: any TelemetryTransport, clock: any TelemetryClock,
         counters: Locked<TelemetryCounters>) throws {
        queue = try DiskBatchQueue(directory: configuration.storageDirectory.appendingPathComponent("queue", isDirectory: true),
                                   maxBatches: configuration.maxQueuedBatches, maxBytes: configuration.maxQueuedBytes,
                                   synchronousWrites: configuration.synchronousWrites, logger: configuration.logger)
        self.configuration = configuration
        self.transport = transport
        self.clock = clock
        self.counters = counters
    }

    /// Batches on disk, including one being sent.
    var queuedBatchCount: Int { queue.batches.count }

    /// Encodes, compresses and persists a sealed batch, then delivers it when delivery is enabled.
    func enqueue(id: UUID, device: TelemetryDevice, samples: [KeyboardSample]) {
        let body = Gzip.compress(UploadBody.json(batchID: id, device: device, samples: samples))
        let evicted: [QueuedBatch]
        do {
            (_, evicted) = try queue.enqueue(id: id, sampleCount: samples.count, body: body)
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

    /// Starts delivering (what earlier runs left on disk, too).
    func enable() {
        enabled = true
        ensureDraining()
    }

    /// Stops delivering: cancels a request in flight (its batch stays queued) and any backoff wait.
    func stop() {
        stopped = true
        drainTask?.cancel()
        backoffTask?.cancel()
        for (id, _) in waiters { resumeWaiter(id, with: isIdle) }
    }

    /// True once the queue is empty and nothing is in flight; false when `timeout` (real seconds) passes first.
    func waitUntilEmpty(timeout: TimeInterval) async -> Bool {
        if isIdle { return true }
        if stopped { return false }
        let id = UUID()
        return await withCheckedContinuation { continuation in
            let timer = Task { [weak self] in
                try? await Task.sleep(nanoseconds: UInt64(max(0, min(timeout, 1e9)) * 1e9))
                guard !Task.isCancelled else { return }
                await self?.resumeWaiter(id, with: false)
            }
            waiters[id] = (continuation, timer)
        }
    }

    private var isIdle: Bool { queue.isEmpty && inFlight == nil }

    private func resumeWaiter(_ id: UUID, with value: Bool) {
        guard let waiter = waiters.removeValue(forKey: id) else { return }
        waiter.timer.cancel()
        waiter.continuation.resume(returning: value)
    }

    private func notifyIfIdle() {
        guard isIdle else { return }
        for id in Array(waiters.keys) { resumeWaiter(id, with: true) }
    }

    private func ensureDraining() {
        guard enabled, !stopped, drainTask == nil, backoffTask == nil, !queue.isEmpty else { return }
        drainTask = Task { await self.drain() }
    }

    private func drain() async {
        defer {
            drainTask = nil
            notifyIfIdle()
        }
        while !stopped, !Task.isCancelled, backoffTask == nil, let batch = queue.oldest {
            let body: Data
            do {
                body = try queue.body(of: batch)
            } catch {
                logger.log(.error, "cannot read queued batch \(batch.file.lastPathComponent): \(error); dropping it")
                queue.remove(batch)
                counters.withLock { $0.batchesDropped += 1; $0.samplesDropped += batch.sampleCount }
                continue
            }
            inFlight = batch
            inFlightEvicted = false
            let outcome: DeliveryOutcome
            do {
                let response = try await transport.send(request(body))
                outcome = DeliveryPolicy.outcome(of: response, now: clock.now())
            } catch {
                inFlight = nil
                if Task.isCancelled || stopped { return }  // shutting down: the batch stays on disk
                outcome = .retry(reason: "\(error)", retryAfter: nil)
            }
            inFlight = nil
            settle(batch, outcome)
        }
    }

    private func request(_ body: Data) -> TransportRequest {
        var headers = ["Content-Type": "application/json", "Content-Encoding": "gzip",
                       "User-Agent": "KeyboardTelemetryClient/1.0"]
        if let token = configuration.authorizationToken { headers["Authorization"] = "Bearer \(token)" }
        return TransportRequest(method: "POST", url: configuration.baseURL.appendingPathComponent("v1/batches"),
                                headers: headers, body: body, timeout: configuration.requestTimeout)
    }

    private func settle(_ batch: QueuedBatch, _ outcome: DeliveryOutcome) {
        let id = batch.id.uuidString.lowercased()
        switch outcome {
        case .acknowledged(let accepted, let rejected):
            queue.remove(batch)
            consecutiveFailures = 0
            counters.withLock { $0.batchesAcknowledged += 1; $0.samplesAccepted += accepted; $0.samplesRejected += rejected }
            if rejected > 0 { logger.log(.info, "batch \(id): kbtd rejected \(rejected) of \(batch.sampleCount) samples") }
        case .duplicate:
            queue.remove(batch)
            consecutiveFailures = 0
            counters.withLock { $0.batchesDuplicate += 1 }
            logger.log(.debug, "batch \(id) was already stored (a retry after a lost answer)")
        case .final(let status, let reason):
            queue.remove(batch)
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
