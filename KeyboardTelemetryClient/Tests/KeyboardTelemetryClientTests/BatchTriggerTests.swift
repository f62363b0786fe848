import Foundation
import KeyboardTelemetryClient
import KeyboardTelemetryClientTesting
import Testing

/// Batches leave at launch, on `flush()`, when the app goes to the background and when a batch
/// fills; never on a timer while the user types.
@Suite("KeyboardTelemetryClient upload triggers")
struct BatchTriggerTests {
    @Test func typingForHoursSendsNothingUntilABatchFills() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = ManualClock()
        let transport = Fixtures.accepting()
        var configuration = Fixtures.configuration(directory: directory)
        configuration.maxBatchSamples = 10
        let client = KeyboardTelemetryClient(device: Fixtures.device, configuration: configuration, transport: transport, clock: clock)
        client.start()
        for i in 0..<9 {
            client.record(Fixtures.show(now: clock.now()))
            clock.advance(by: 3600)
            #expect(client.pendingSampleCount == i + 1)
        }
        await client.waitUntilLoaded()
        #expect(clock.sleeperCount == 0, "no timer waits to seal a batch")
        #expect(transport.batches.isEmpty, "nine hours of typing, nothing sent")
        client.record(Fixtures.show(now: clock.now()))  // the tenth sample fills the batch
        #expect(await client.waitForDelivery(timeout: 30))
        #expect(transport.batches.count == 1 && transport.batches.first?.sampleTimes.count == 10)
        await client.shutdown()
    }

    @Test func flushSealsAndSendsAtOnce() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let transport = Fixtures.accepting()
        let client = KeyboardTelemetryClient(device: Fixtures.device, configuration: Fixtures.configuration(directory: directory),
                                             transport: transport)
        client.start()
        for _ in 0..<3 { client.record(Fixtures.show()) }
        await client.flush()
        #expect(client.pendingSampleCount == 0)
        #expect(await client.waitForDelivery(timeout: 30))
        #expect(transport.batches.map(\.sampleTimes.count) == [3])
        #expect(client.counters.batchesAcknowledged == 1 && client.counters.samplesAccepted == 3)
        await client.shutdown()
    }

    @Test func nothingLeavesBeforeStartAndTheQueueLeavesAtLaunch() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let transport = Fixtures.accepting()
        let client = KeyboardTelemetryClient(device: Fixtures.device, configuration: Fixtures.configuration(directory: directory),
                                             transport: transport)
        client.record(Fixtures.show())
        await client.flush()
        #expect(await client.queuedBatchCount() == 1)
        #expect(transport.requests.isEmpty, "no request before start()")
        #expect(await client.sendInBackground() == false, "delivery was never started")
        await client.shutdown()

        // The next launch.
        let next = KeyboardTelemetryClient(device: Fixtures.device, configuration: Fixtures.configuration(directory: directory),
                                           transport: transport)
        next.start()
        #expect(await next.waitForDelivery(timeout: 30))
        #expect(transport.batches.count == 1 && next.counters.batchesAcknowledged == 1)
        await next.shutdown()
    }

    @Test func goingToTheBackgroundSendsEverythingAndSaysSo() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let transport = Fixtures.accepting()
        var configuration = Fixtures.configuration(directory: directory)
        configuration.maxBatchSamples = 4
        let client = KeyboardTelemetryClient(device: Fixtures.device, configuration: configuration, transport: transport)
        client.start()
        for _ in 0..<10 { client.record(Fixtures.show()) }
        #expect(await client.sendInBackground())
        #expect(await client.queuedBatchCount() == 0)
        #expect(transport.batches.map(\.sampleTimes.count).sorted() == [2, 4, 4])
        #expect(await client.sendInBackground(), "nothing left: true at once")
        await client.shutdown()
    }

    @Test func inTheBackgroundAFailedAttemptEndsTheWaitAndTheBatchStaysQueued() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let client = KeyboardTelemetryClient(device: Fixtures.device, configuration: Fixtures.configuration(directory: directory),
                                             transport: Fixtures.refusing(), clock: ManualClock())
        client.start()
        client.record(Fixtures.show())
        #expect(await client.sendInBackground() == false)
        #expect(client.counters.failedAttempts == 1)
        #expect(await client.queuedBatchCount() == 1)
        await client.shutdown()
    }

    @Test func expiredBackgroundTimeCancelsTheRequestInFlightAndTheNextStartSendsTheSameBatch() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // The first upload hangs (the network went away); later ones are answered.
        let attempts = AttemptCounter()
        let transport = ScriptedTransport { request in
            if request.method == "POST" && attempts.next() == 1 { try await ScriptedTransport.hang() }
            return ScriptedTransport.accept(request)
        }
        let client = KeyboardTelemetryClient(device: Fixtures.device, configuration: Fixtures.configuration(directory: directory),
                                             transport: transport)
        client.start()
        client.record(Fixtures.show())
        async let sent = client.sendInBackground()
        let posts = { transport.requests.filter { $0.method == "POST" }.count }
        #expect(await eventually { posts() == 1 }, "the upload is in flight")
        client.backgroundTimeExpired()
        #expect(await sent == false)
        #expect(await client.queuedBatchCount() == 1, "the cancelled batch stays queued")
        #expect(client.counters.failedAttempts == 0, "a cancellation is not a failure: no backoff")
        #expect(posts() == 1, "paused: nothing more is sent")

        client.start()  // back in the foreground
        #expect(await client.waitForDelivery(timeout: 30))
        let ids = transport.batches.map(\.batchID)
        #expect(ids.count == 2 && Set(ids).count == 1, "the same batch_id again: \(ids)")
        await client.shutdown()
    }
}

/// Counts calls across tasks.
final class AttemptCounter: @unchecked Sendable {  // guarded by `lock`
    private let lock = NSLock()
    private var count = 0

    /// 1 for the first call, 2 for the second, ...
    func next() -> Int { lock.withLock { count += 1; return count } }
}
