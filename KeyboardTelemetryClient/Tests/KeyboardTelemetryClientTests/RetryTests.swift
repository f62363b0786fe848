import Foundation
import KeyboardTelemetryClient
import KeyboardTelemetryClientTesting
import Testing

/// Backoff between failed attempts, on the recording clock (no real waiting).
@Suite("KeyboardTelemetryClient backoff")
struct RetryTests {
    @Test func backoffGrowsExponentiallyWithJitterUpToItsCap() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = RecordingClock()
        var configuration = Fixtures.configuration(directory: directory)
        configuration.backoffBase = 2
        configuration.backoffMax = 60
        let client = KeyboardTelemetryClient(device: Fixtures.device, configuration: configuration, transport: Fixtures.refusing(),
                                             clock: clock)
        client.start()
        client.record(Fixtures.show())
        await client.flush()
        #expect(await eventually { clock.sleeps.count >= 9 })
        await client.shutdown()
        let sleeps = Array(clock.sleeps.prefix(9))
        // Failure n waits between half and all of min(60, 2 * 2^(n-1)).
        for (n, delay) in sleeps.enumerated() {
            let ceiling = min(60, 2 * pow(2, Double(n)))
            #expect(delay >= ceiling / 2 && delay <= ceiling, "failure \(n + 1): \(delay) s")
        }
        #expect(Set(sleeps.suffix(4)).count > 1, "jittered: capped delays still differ")
        #expect(await client.queuedBatchCount() == 1, "the batch waits on disk")
        #expect(client.counters.batchesDropped == 0)
    }
}
