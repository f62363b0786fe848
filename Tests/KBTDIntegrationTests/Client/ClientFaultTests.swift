import Foundation
import KBTDCore
import KeyboardTelemetryClient
import Testing

/// Failures the live daemon cannot produce on cue, injected by `FaultProxy`
/// in front of it: 503/429 with `Retry-After`, and dropped connections.
@Suite("KeyboardTelemetryClient retries: Retry-After, dropped connections, backoff", .ownThreads, .timeLimit(.minutes(10)))
struct ClientFaultTests {
    @Test func honoursRetryAfterOn503And429AndKeepsTheBatchID() async throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let daemon = try TestDaemon().start()
        let proxy = try FaultProxy(upstreamPort: daemon.port, script: [
            .respond(status: 503, headers: [("Retry-After", "3")]),
            .respond(status: 429, headers: [("Retry-After", "7")]),
        ])
        defer { proxy.stop() }
        let clock = RecordingClock()
        let client = KeyboardTelemetryClient(device: ClientFixtures.device,
                                                 configuration: ClientFixtures.configuration(port: proxy.port, directory: directory), clock: clock)
        client.start()
        for i in 0..<12 { client.record(ClientFixtures.show(i)) }
        await client.flush()
        #expect(await client.waitForDelivery(timeout: 120))

        // Waited at least what each answer asked for (plus at most 10 % jitter), not the short backoff.
        let sleeps = clock.sleeps
        #expect(sleeps.count == 2)
        if sleeps.count == 2 {
            #expect(sleeps[0] >= 3 && sleeps[0] <= 3.3)
            #expect(sleeps[1] >= 7 && sleeps[1] <= 7.7)
        }
        let counters = client.counters
        #expect(counters.retryAfterWaits == 2 && counters.failedAttempts == 2)
        #expect(counters.batchesAcknowledged == 1 && counters.samplesAccepted == 12)
        // Three attempts, one batch id.
        let ids = proxy.requests.map { ClientFixtures.batchID(ofGzipBody: $0.body) }
        #expect(ids.count == 3 && Set(ids).count == 1 && ids[0] != nil)
        #expect(proxy.requests.allSatisfy { request in
            request.headers.contains { $0.0.lowercased() == "content-encoding" && $0.1 == "gzip" }
        })
        #expect(try ClientFixtures.storedSamples(daemon) == 12)
        await client.shutdown()
    }

    @Test func retryAfterAsAnHTTPDate() async throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let daemon = try TestDaemon().start()
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let before = Date()
        let date = formatter.string(from: before.addingTimeInterval(120))
        let proxy = try FaultProxy(upstreamPort: daemon.port, script: [.respond(status: 503, headers: [("Retry-After", date)])])
        defer { proxy.stop() }
        let clock = RecordingClock()
        let client = KeyboardTelemetryClient(device: ClientFixtures.device,
                                                 configuration: ClientFixtures.configuration(port: proxy.port, directory: directory), clock: clock)
        client.start()
        client.record(ClientFixtures.show())
        await client.flush()
        #expect(await client.waitForDelivery(timeout: 120))
        // The wait is the date minus the moment of the 503 (somewhere in this test), whole seconds, plus at most 1 s of jitter.
        let slack = Date().timeIntervalSince(before)
        let sleeps = clock.sleeps
        #expect(sleeps.count == 1 && (sleeps.first ?? 0) >= 119 - slack && (sleeps.first ?? 0) <= 121, "\(sleeps), slack \(slack)")
        #expect(try ClientFixtures.storedSamples(daemon) == 1)
        await client.shutdown()
    }

    @Test func droppedConnectionsDeliverEverySampleExactlyOnce() async throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let daemon = try TestDaemon().start()
        // Batch 1: the connection drops before kbtd sees it, then after kbtd stored it (the answer is lost).
        // Batch 2: dropped after kbtd stored it. Everything after that is forwarded.
        let proxy = try FaultProxy(upstreamPort: daemon.port, script: [
            .dropBeforeForwarding, .dropAfterForwarding, .forward, .dropAfterForwarding,
        ])
        defer { proxy.stop() }
        var configuration = ClientFixtures.configuration(port: proxy.port, directory: directory)
        configuration.maxBatchSamples = 10
        let client = KeyboardTelemetryClient(device: ClientFixtures.device, configuration: configuration)
        client.start()
        for i in 0..<30 { client.record(ClientFixtures.show(i)) }
        await client.flush()
        #expect(await client.waitForDelivery(timeout: 120))

        let requests = proxy.requests
        let ids = requests.map { ClientFixtures.batchID(ofGzipBody: $0.body) ?? "?" }
        // Batch 1 was sent three times with one id, batch 2 twice; each last attempt retried a stored batch.
        #expect(ids.count == 6, "\(requests.map(\.action))")
        #expect(Set(ids).count == 3, "three batches, each with one id across its retries")
        if ids.count == 6 {
            #expect(ids[0] == ids[1] && ids[1] == ids[2] && ids[3] == ids[4] && ids[0] != ids[3])
            #expect(requests[2].upstreamStatus == 200, "the retry after the lost answer is a duplicate")
            #expect(requests[4].upstreamStatus == 200)
        }
        let counters = client.counters
        #expect(counters.failedAttempts == 3)
        #expect(counters.batchesDuplicate == 2 && counters.batchesAcknowledged == 1)
        // kbtd counted each sample once, although batches 1 and 2 reached it twice.
        #expect(try ClientFixtures.storedSamples(daemon) == 30)
        await client.shutdown()
    }
}
