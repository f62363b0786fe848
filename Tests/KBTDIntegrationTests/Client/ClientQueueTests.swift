import Foundation
import KeyboardTelemetryClient
import Testing

/// The bounded on-disk queue: it survives the app, and past its cap it drops the oldest batches.
@Suite("KeyboardTelemetryClient on-disk queue", .ownThreads, .timeLimit(.minutes(10)))
struct ClientQueueTests {
    @Test func aNewClientOnTheSameDirectoryDeliversWhatTheOldOneQueued() async throws {
        let (daemon, port) = try ClientFixtures.stoppedDaemonKeepingItsPort()
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }

        // Launch 1: the daemon is down. Two batches fail to send; 5 samples are still pending at shutdown.
        var configuration = ClientFixtures.configuration(port: port, directory: directory)
        configuration.maxBatchSamples = 10
        let first = KeyboardTelemetryClient(device: ClientFixtures.device, configuration: configuration)
        first.start()
        for i in 0..<25 { first.record(ClientFixtures.show(i)) }
        #expect(await ClientFixtures.eventually("first.counters.failedAttempts >= 1") { first.counters.failedAttempts >= 1 })
        await first.shutdown()
        #expect(first.counters.batchesQueued == 3, "shutdown seals and persists the pending samples")
        #expect(first.counters.batchesAcknowledged == 0)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("queue").path)
        #expect(files.filter { $0.hasSuffix(".json.gz") }.count == 3)

        // Launch 2: a new client instance on the same directory, the daemon up.
        try daemon.start()
        let second = KeyboardTelemetryClient(device: ClientFixtures.device, configuration: configuration)
        #expect(await second.queuedBatchCount() == 3)
        second.start()
        #expect(await second.waitForDelivery(timeout: 120))
        #expect(second.counters.batchesAcknowledged == 3 && second.counters.samplesAccepted == 25)
        #expect(try ClientFixtures.storedSamples(daemon) == 25)
        await second.shutdown()
    }

    @Test func pastTheCapTheOldestBatchesAreDroppedAndCounted() async throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (daemon, port) = try ClientFixtures.stoppedDaemonKeepingItsPort()
        // The manual clock holds the client in its first backoff until the test moves it.
        let clock = ManualClock()
        var configuration = ClientFixtures.configuration(port: port, directory: directory)
        configuration.maxQueuedBatches = 3
        configuration.backoffBase = 10
        configuration.backoffMax = 10
        let logs = LogRecorder()
        configuration.logger = logs.logger
        let client = KeyboardTelemetryClient(device: ClientFixtures.device, configuration: configuration, clock: clock)
        client.start()
        // Batch k (1...5) holds k samples, so the stored total says which batches survived.
        for k in 1...5 {
            for i in 0..<k { client.record(ClientFixtures.show(i)) }
            await client.flush()
            if k == 1 {
                #expect(await ClientFixtures.eventually("client.counters.failedAttempts == 1") { client.counters.failedAttempts == 1 })
            }
        }
        #expect(await client.queuedBatchCount() == 3)
        let counters = client.counters
        #expect(counters.batchesEvicted == 2 && counters.samplesEvicted == 1 + 2)
        #expect(logs.messages(atLeast: .warning).filter { $0.contains("dropped the oldest batch") }.count == 2)

        try daemon.start()
        clock.advance(by: 10)
        #expect(await client.waitForDelivery(timeout: 120))
        #expect(client.counters.batchesAcknowledged == 3)
        #expect(try ClientFixtures.storedSamples(daemon) == 3 + 4 + 5, "batches 3, 4 and 5: the newest")
        await client.shutdown()
    }
}
