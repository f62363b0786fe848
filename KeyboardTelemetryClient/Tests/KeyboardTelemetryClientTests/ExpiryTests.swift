import Foundation
import KeyboardTelemetryClient
import KeyboardTelemetryClientTesting
import Testing

/// Samples older than kbtd accepts (30 days, `FieldRules.maxAge`) are dropped and counted, not sent.
@Suite("KeyboardTelemetryClient sample age")
struct ExpiryTests {
    static let day: TimeInterval = 86_400

    @Test func samplesOlderThanThirtyDaysAreDroppedWhenTheBatchIsSealed() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = ManualClock()
        let transport = Fixtures.accepting()
        let client = KeyboardTelemetryClient(device: Fixtures.device, configuration: Fixtures.configuration(directory: directory),
                                             transport: transport, clock: clock)
        client.start()
        let now = clock.now()
        client.record(Fixtures.show(31 * Self.day, now: now))
        client.record(Fixtures.show(30 * Self.day - 60, now: now))
        client.record(Fixtures.show(0, now: now))
        #expect(await client.sendInBackground())
        #expect(transport.batches.map(\.sampleTimes.count) == [2])
        let counters = client.counters
        #expect(counters.samplesExpired == 1 && counters.batchesExpired == 0 && counters.samplesAccepted == 2)
        await client.shutdown()
    }

    @Test func aBatchWhoseSamplesAllExpiredIsNotQueued() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = ManualClock()
        let client = KeyboardTelemetryClient(device: Fixtures.device, configuration: Fixtures.configuration(directory: directory),
                                             transport: Fixtures.accepting(), clock: clock)
        for _ in 0..<3 { client.record(Fixtures.show(40 * Self.day, now: clock.now())) }
        await client.flush()
        #expect(await client.queuedBatchCount() == 0)
        #expect(client.counters.samplesExpired == 3 && client.counters.batchesQueued == 0)
        await client.shutdown()
    }

    @Test func aQueuedBatchThatWaitedPastTheLimitIsDroppedUnsent() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = ManualClock()
        // Offline for a month: the batch waits on disk.
        let offline = KeyboardTelemetryClient(device: Fixtures.device, configuration: Fixtures.configuration(directory: directory),
                                              transport: Fixtures.refusing(), clock: clock)
        offline.record(Fixtures.show(2 * Self.day, now: clock.now()))
        offline.record(Fixtures.show(1 * Self.day, now: clock.now()))
        await offline.flush()
        offline.record(Fixtures.show(0, now: clock.now()))
        await offline.shutdown()
        #expect(queueFiles(directory).count == 2)

        clock.advance(by: 29 * Self.day + 3600)  // the first batch's newest sample is now 30 days and an hour old
        let transport = Fixtures.accepting()
        let online = KeyboardTelemetryClient(device: Fixtures.device, configuration: Fixtures.configuration(directory: directory),
                                             transport: transport, clock: clock)
        online.start()
        #expect(await online.waitForDelivery(timeout: 30))
        #expect(transport.batches.map(\.sampleTimes.count) == [1], "only the younger batch is sent")
        let counters = online.counters
        #expect(counters.batchesExpired == 1 && counters.samplesExpired == 2)
        #expect(counters.batchesAcknowledged == 1)
        #expect(queueFiles(directory).isEmpty)
        await online.shutdown()
    }

    @Test func maxSampleAgeInfinitySendsEverything() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = Fixtures.configuration(directory: directory)
        configuration.maxSampleAge = .infinity
        let transport = Fixtures.accepting()
        let client = KeyboardTelemetryClient(device: Fixtures.device, configuration: configuration, transport: transport)
        client.start()
        client.record(Fixtures.show(400 * Self.day))
        #expect(await client.sendInBackground())
        #expect(transport.batches.map(\.sampleTimes.count) == [1] && client.counters.samplesExpired == 0)
        await client.shutdown()
    }
}
