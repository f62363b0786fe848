import Foundation
import KBTDCore
import KeyboardTelemetryClient
import Testing

/// The client against the live daemon: batching, receipts, exactly-once across a kill -9.
@Suite("KeyboardTelemetryClient delivery against the live daemon", .ownThreads, .timeLimit(.minutes(10)))
struct ClientDeliveryTests {
    @Test func sealsByCountAndOnDemandAndKbtdStoresWhatWasRecorded() async throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let daemon = try TestDaemon().start()
        let clock = ManualClock()
        let client = KeyboardTelemetryClient(device: ClientFixtures.device,
                                                 configuration: ClientFixtures.configuration(port: daemon.port, directory: directory), clock: clock)
        client.start()
        // The first show after launch: the app asked for the keyboard 412.5 ms earlier, without pre-warming.
        client.keyboardRequested(preloaded: false)
        clock.advance(by: 0.4125)
        for i in 0..<249 {
            client.record(ClientFixtures.show(i, language: "ja-JP", height: 344, accessory: 48))
        }
        client.record(ClientFixtures.show(0, curve: 99))  // kbtd rejects this one sample
        // Default maxBatchSamples is 100: two batches sealed, 50 samples still pending.
        #expect(client.pendingSampleCount == 50)
        await client.flush()
        #expect(client.pendingSampleCount == 0)
        #expect(await client.waitForDelivery(timeout: 120))

        let counters = client.counters
        #expect(counters.samplesRecorded == 250 && counters.batchesQueued == 3)
        #expect(counters.batchesAcknowledged == 3 && counters.samplesAccepted == 249 && counters.samplesRejected == 1)
        #expect(counters.batchesDuplicate == 0 && counters.failedAttempts == 0)
        #expect(await client.queuedBatchCount() == 0)

        let stats = try daemon.stats()
        #expect(stats["samples"] == .number(249))
        let row = try #require(statsRow(stats, model: "iPhone17,1", language: "ja-JP", osMajor: 26))
        #expect(row["height_mode"] == .number(344), "the accessory view is sent and removed by kbtd")
        #expect(row["cold_start_samples"] == .number(1), "only the first show after launch carries a cold start")
        let cold = try #require(row["cold_start_p50_ms"]?.double)
        #expect(abs(cold - 412.5) <= 412.5 * 0.01)
        await client.shutdown()
    }

    /// `BackgroundUploadTransport` (a background `URLSession` on Apple platforms, an ordinary one here)
    /// uploads each batch from its queue file, and kbtd stores what the file holds.
    @Test func uploadsFromTheQueueFilesThroughTheBackgroundUploadTransport() async throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let daemon = try TestDaemon().start()
        let transport = RecordingTransport(BackgroundUploadTransport(identifier: "kbtd-tests-\(UUID().uuidString)",
                                                                     fallback: URLSessionTransport()))
        var configuration = ClientFixtures.configuration(port: daemon.port, directory: directory)
        configuration.maxBatchSamples = 10
        let client = KeyboardTelemetryClient(device: ClientFixtures.device, configuration: configuration, transport: transport)
        client.start()
        for i in 0..<25 { client.record(ClientFixtures.show(i)) }
        // On a loaded machine an upload can run past the request timeout: sendInBackground() then
        // stops at that failure (false), and the client's own retry delivers the batch.
        if !(await client.sendInBackground()) { #expect(await client.waitForDelivery(timeout: 120)) }
        let posts = transport.exchanges.filter { $0.request.method == "POST" }
        #expect(posts.allSatisfy { $0.request.bodyFile != nil }, "every upload from its queue file")
        // A batch whose answer the timeout cut off is acknowledged as a duplicate on its retry.
        let counters = client.counters
        #expect(counters.batchesAcknowledged + counters.batchesDuplicate == 3)
        #expect(posts.filter { $0.status == 202 }.count == counters.batchesAcknowledged)
        #expect(try ClientFixtures.storedSamples(daemon) == 25)
        #expect(await client.queuedBatchCount() == 0, "each file removed after its 202")
        await client.shutdown()
    }

    @Test func everySampleCountedOnceAcrossKillNineAndRestart() async throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let daemon = try TestDaemon(keepsPort: true).start()
        let port = daemon.port
        var configuration = ClientFixtures.configuration(port: port, directory: directory)
        configuration.maxBatchSamples = 20
        let client = KeyboardTelemetryClient(device: ClientFixtures.device, configuration: configuration)
        client.start()
        let batches = 120
        for i in 0..<(batches * 20) { client.record(ClientFixtures.show(i)) }
        await client.flush()

        // Kill the daemon while the client is half-way through its queue, then bring it back on the same port.
        #expect(await ClientFixtures.eventually("client.counters.batchesAcknowledged >= 10") { client.counters.batchesAcknowledged >= 10 })
        daemon.kill9()
        let acknowledgedBeforeKill = client.counters.batchesAcknowledged
        #expect(acknowledgedBeforeKill < batches, "the kill must land mid-flight")
        try daemon.start()  // on the same port (kill9 has reaped the old process)

        #expect(await client.waitForDelivery(timeout: 120))
        let counters = client.counters
        #expect(counters.failedAttempts >= 1, "the client saw the daemon go away")
        #expect(counters.batchesAcknowledged + counters.batchesDuplicate == batches)
        #expect(counters.batchesDropped == 0 && counters.batchesEvicted == 0)
        // Exactly once: every sample stored, none twice, whatever the kill interrupted.
        #expect(try ClientFixtures.storedSamples(daemon) == batches * 20)
        await client.shutdown()
    }

    @Test func finalBadRequestIsDroppedCountedAndLogged() async throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let daemon = try TestDaemon().start()
        let logs = LogRecorder()
        // A model with a space breaks the batch-level rules: kbtd answers 400 for the whole batch.
        let device = TelemetryDevice(model: "iPhone 17", os: "26.1")
        let client = KeyboardTelemetryClient(
            device: device, configuration: ClientFixtures.configuration(port: daemon.port, directory: directory, logger: logs.logger))
        client.start()
        for i in 0..<7 { client.record(ClientFixtures.show(i)) }
        await client.flush()
        #expect(await client.waitForDelivery(timeout: 120))
        let counters = client.counters
        #expect(counters.batchesDropped == 1 && counters.samplesDropped == 7)
        #expect(counters.failedAttempts == 0, "a 400 is final: no retry")
        #expect(await client.queuedBatchCount() == 0)
        #expect(logs.messages(atLeast: .error).contains { $0.contains("HTTP 400") && $0.contains("7 samples") })
        #expect(try ClientFixtures.storedSamples(daemon) == 0)
        await client.shutdown()
    }
}
