import Foundation
import KBTDCore
import KeyboardTelemetryClient
import Testing

/// Recording and encoding: what reaches kbtd is what the notification said.
@Suite("KeyboardTelemetryClient recording and encoding", .ownThreads, .timeLimit(.minutes(10)))
struct ClientRecordingTests {
    @Test(arguments: [0, 1, 100, 70_000])
    func gzipRoundTripsThroughKbtdsStrictInflater(size: Int) throws {
        var generator = SystemRandomNumberGenerator()
        let text = (0..<size).map { _ in UInt8(ascii: "a") + UInt8(generator.next() % 8) }
        let compressed = Gzip.compress(Data(text))
        #expect(compressed.prefix(2) == Data([0x1f, 0x8b]), "gzip magic")
        #expect(try ClientFixtures.inflate([UInt8](compressed)) == text)
    }

    /// The raw-value mapping is the client package's test; that the names are kbtd's is this repository's.
    @Test func everyKeyboardTypeNameIsOneKbtdAccepts() {
        #expect(Set(KeyboardType.allCases.map(\.rawValue)) == KeyboardTypes.all)
    }

    /// docs/privacy.md: a batch holds the documented fields and nothing else: a random batch id,
    /// the model, OS and screen, and samples whose time is in whole seconds.
    @Test func aBatchCarriesOnlyTheDocumentedFieldsAndWholeSeconds() async throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let daemon = try TestDaemon().start()
        let transport = RecordingTransport()
        var configuration = ClientFixtures.configuration(port: daemon.port, directory: directory)
        configuration.screen = "393x852"
        let client = KeyboardTelemetryClient(device: TelemetryDevice(model: "iPhone17,1", os: "26.1"),
                                                 configuration: configuration, transport: transport)
        client.start()
        client.record(KeyboardSample(event: .show, height: 336, safeAreaBottom: 34, language: "en-US", orientation: .portrait,
                                     timestamp: Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down) - 0.375)))
        await client.flush()
        #expect(await client.waitForDelivery(timeout: 120))
        await client.shutdown()
        let post = try #require(transport.exchanges.first { $0.request.method == "POST" })
        let batch = try JSONParser.parse(try ClientFixtures.inflate([UInt8](try #require(post.request.body))))
        guard case .object(let fields) = batch, case .object(let device)? = batch["device"],
              case .array(let samples)? = batch["samples"], case .object(let sample)? = samples.first else {
            Issue.record("not a batch: \(batch)")
            return
        }
        #expect(Set(fields.keys) == ["batch_id", "device", "samples"])
        #expect(Set(device.keys) == ["model", "os", "screen"], "no app, app_version or identifier")
        #expect(Set(sample.keys).isSubset(of: ["t", "event", "language", "orientation", "keyboard_type", "height", "accessory_height",
                                                   "safe_area_bottom", "duration", "curve", "cold_start_ms", "preloaded",
                                                   "floating", "hardware_keyboard"]))
        guard case .number(let t)? = sample["t"] else {
            Issue.record("no t")
            return
        }
        #expect(t == t.rounded(.down), "whole seconds: \(t)")
        #expect(post.request.headers.keys.allSatisfy { ["Content-Type", "Content-Encoding", "User-Agent", "Authorization"].contains($0) },
                "\(post.request.headers.keys)")
    }

    @Test func preWarmedFirstShowAndEscapedStringsReachKbtd() async throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let daemon = try TestDaemon().start()
        let clock = ManualClock()
        // Quotes, a newline and non-ASCII in the app fields must survive the hand-written JSON.
        let device = TelemetryDevice(model: "iPad14,3", os: "18.6.2", app: "com.example.\"chat\"\n", appVersion: "3.2 ☃")
        let client = KeyboardTelemetryClient(device: device, configuration: ClientFixtures.configuration(port: daemon.port, directory: directory),
                                                 clock: clock)
        client.start()
        client.keyboardRequested(preloaded: true)
        clock.advance(by: 0.032)
        client.record(KeyboardSample(event: .show, height: 398, safeAreaBottom: 20, language: "zh-Hans", orientation: .landscape))
        clock.advance(by: 5)
        client.record(KeyboardSample(event: .hide, height: 398, safeAreaBottom: 20, language: "zh-Hans", orientation: .landscape))
        client.record(KeyboardSample(event: .show, height: 398, safeAreaBottom: 20, language: "zh-Hans", orientation: .landscape))
        await client.flush()
        #expect(await client.waitForDelivery(timeout: 120))
        #expect(client.counters.samplesAccepted == 3 && client.counters.samplesRejected == 0)

        let stats = try daemon.stats()
        let row = try #require(statsRow(stats, model: "iPad14,3", language: "zh-Hans", orientation: "landscape", osMajor: 18))
        #expect(row["samples"] == .number(3))
        #expect(row["preloaded_samples"] == .number(1) && row["cold_start_samples"] == .number(0))
        let warm = try #require(row["preloaded_p50_ms"]?.double)
        #expect(abs(warm - 32) <= 32 * 0.01)
        await client.shutdown()
    }

    /// Batch ids are version 7 UUIDs (RFC 9562) with the sealing time in whole seconds, so a batch
    /// sealed in a later second sorts after an earlier one (kbtd's batch index grows at its end),
    /// and no finer time than the samples' own `t` leaves the phone.
    @Test func batchIDsAreTimeOrderedToTheSecond() async throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let daemon = try TestDaemon().start()
        let transport = RecordingTransport()
        let client = KeyboardTelemetryClient(device: TelemetryDevice(model: "iPhone17,1", os: "26.1"),
                                                 configuration: ClientFixtures.configuration(port: daemon.port, directory: directory),
                                                 transport: transport)
        client.start()
        let before = Date().timeIntervalSince1970.rounded(.down)
        for height in [336.0, 346.0] {
            client.record(KeyboardSample(event: .show, height: height, safeAreaBottom: 34, language: "en-US", orientation: .portrait))
            await client.flush()
        }
        #expect(await client.waitForDelivery(timeout: 120))
        let after = Date().timeIntervalSince1970.rounded(.down)
        await client.shutdown()
        var ids: [String] = []
        for exchange in transport.exchanges where exchange.request.method == "POST" {
            let batch = try JSONParser.parse(try ClientFixtures.inflate([UInt8](try #require(exchange.request.body))))
            guard case .string(let id)? = batch["batch_id"] else {
                Issue.record("no batch_id in \(batch)")
                continue
            }
            if !ids.contains(id) { ids.append(id) }
        }
        #expect(ids.count == 2, "two batches: \(ids)")
        for id in ids {
            let hex = Array(id.replacingOccurrences(of: "-", with: ""))
            #expect(hex.count == 32 && hex[12] == "7", "version 7: \(id)")
            #expect(hex.count == 32 && "89ab".contains(hex[16]), "RFC 9562 variant: \(id)")
            let milliseconds = UInt64(String(hex.prefix(12)), radix: 16) ?? 0
            #expect(milliseconds % 1000 == 0, "whole seconds: \(id)")
            let seconds = Double(milliseconds / 1000)
            #expect(seconds >= before && seconds <= after, "sealed between \(before) and \(after): \(id)")
        }
        // Within one second the random bits decide; across seconds the later batch sorts after.
        let seconds = ids.map { $0.prefix(13) }
        #expect(seconds == seconds.sorted(), "in sealing order: \(ids)")
    }
}
