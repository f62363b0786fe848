import Foundation
import KeyboardTelemetryClient
import KeyboardTelemetryClientTesting
import Testing

/// `estimatedHeight` and `shouldPrewarmKeyboard` against canned answers of `GET /v1/heights` and
/// canned `kbtd export` tables: from memory, never waiting for the network.
@Suite("KeyboardTelemetryClient heights and cold start")
struct HeightsTests {
    static let coldStart = #"{"without_prewarm": {"p50_ms": 412.5, "p90_ms": 1210.0, "samples": 340}, "with_prewarm": {"p50_ms": 38.0, "p90_ms": 95.0, "samples": 120}}"#
    static let expected = KeyboardColdStart(withoutPrewarm: .init(p50Ms: 412.5, p90Ms: 1210, samples: 340),
                                            withPrewarm: .init(p50Ms: 38, p90Ms: 95, samples: 120))

    /// `/v1/heights` for iPhone17,1 on 26.1, with `extra` members at the top level (a newer kbtd's fields).
    static func heightsAnswer(_ extra: String = "") -> String {
        #"{"model": "iPhone17,1", "os": "26.1", "estimates": [{"language": "en-US", "orientation": "portrait", "keyboard_type": "default", "height": 336.0, "basis": "model+os+language", "samples": 40, "p10": 336.0}], "default": {"portrait": {"height": 335.0, "basis": "default", "samples": 0}, "landscape": {"height": 209.0, "basis": "default", "samples": 0}}"#
            + extra + "}"
    }

    /// A transport answering `GET /v1/heights` with `body` (200, an ETag) and refusing batches.
    static func serving(_ body: String) -> ScriptedTransport {
        ScriptedTransport { request in
            guard request.method == "GET" else { return TransportResponse(status: 503) }
            return TransportResponse(status: 200, headers: ["ETag": "\"1\""], body: Data(body.utf8))
        }
    }

    static func client(_ directory: URL, _ transport: any TelemetryTransport, bundled: BundledHeightTable? = nil,
                       device: TelemetryDevice = Fixtures.device) -> KeyboardTelemetryClient {
        var configuration = Fixtures.configuration(directory: directory)
        configuration.bundledHeights = bundled
        return KeyboardTelemetryClient(device: device, configuration: configuration, transport: transport)
    }

    @Test func coldStartFromKbtdsAnswerDecidesPrewarmingAndOutlivesTheLaunch() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let client = Self.client(directory, Self.serving(Self.heightsAnswer(#", "cold_start": "# + Self.coldStart)))
        #expect(client.keyboardColdStart() == nil && !client.shouldPrewarmKeyboard(), "unknown before kbtd answered")
        #expect(await client.refreshHeights() == .updated)
        #expect(client.keyboardColdStart() == Self.expected)
        #expect(client.keyboardColdStart()?.medianSavingMs == 374.5)
        #expect(client.shouldPrewarmKeyboard())
        #expect(client.shouldPrewarmKeyboard(minimumSavingMs: 374))
        #expect(!client.shouldPrewarmKeyboard(minimumSavingMs: 374.5), "the saving must exceed the threshold")
        await client.shutdown()

        let next = Self.client(directory, Fixtures.refusing())
        await next.waitUntilLoaded()
        #expect(next.keyboardColdStart() == Self.expected && next.shouldPrewarmKeyboard())
        await next.shutdown()
    }

    @Test(arguments: [
        ("", "absent: daemons before cold_start, or neither side supported"),
        (#", "cold_start": {"without_prewarm": {"p50_ms": 412.5, "p90_ms": 1210.0, "samples": 340}}"#, "one side only"),
        (#", "cold_start": {"with_prewarm": {"p50_ms": 38.0, "p90_ms": 95.0, "samples": 120}}"#, "the other side only"),
    ])
    func withoutBothSidesPrewarmingIsNotAdvised(extra: String, _ why: String) async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let client = Self.client(directory, Self.serving(Self.heightsAnswer(extra)))
        #expect(await client.refreshHeights() == .updated)
        #expect(!client.shouldPrewarmKeyboard(minimumSavingMs: 0), "\(why)")
        #expect(client.keyboardColdStart()?.medianSavingMs == nil)
        #expect(client.heightEstimate(language: "en-US", orientation: .portrait) == .init(height: 336, source: .server(basis: "model+os+language")))
        await client.shutdown()
    }

    @Test(arguments: [
        #", "cold_start": "soon""#,
        #", "cold_start": {"without_prewarm": {"p50_ms": "fast"}, "with_prewarm": {"p50_ms": 38.0, "p90_ms": 95.0, "samples": 120}}"#,
        #", "cold_start": null, "heights_v2": {"anything": [1, 2, 3]}"#,
        #", "cold_start": {"without_prewarm": {"p50_ms": 412.5, "p90_ms": 1210.0, "samples": 340, "p99_ms": 2000}, "with_prewarm": {"p50_ms": 38.0, "p90_ms": 95.0, "samples": 120}, "by_language": {}}"#,
    ])
    func oddOrNewerFieldsCostNothingElse(extra: String) async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let client = Self.client(directory, Self.serving(Self.heightsAnswer(extra)))
        #expect(await client.refreshHeights() == .updated, "the heights still count")
        #expect(client.estimatedHeight(language: "en-US", orientation: .portrait) == 336)
        // Unknown members inside a known shape are ignored; a value of another shape reads as unknown.
        #expect(client.keyboardColdStart() == (extra.contains("p99_ms") ? Self.expected : nil))
        await client.shutdown()
    }

    /// `kbtd export`'s table with `cold_start` per OS major for one model, and members this client does not know.
    static let table = #"""
        {"format": "kbtd-height-table", "version": 1, "generated_at": "2026-11-29T00:00:00Z", "defaults": {"portrait": 335.0, "landscape": 209.0},
         "models": {"iPhone17,1": {"screen": "402x874", "heights": {"en-US|portrait|default": 336.0}, "future": true,
                                   "cold_start": {"26": \#(coldStart),
                                                  "18": {"without_prewarm": {"p50_ms": 300.0, "p90_ms": 900.0, "samples": 80}},
                                                  "17": {"without_prewarm": "odd"}}},
                    "iPhone16,2": {"heights": {"en-US|portrait|default": 336.0}}},
         "screens": {}}
        """#

    @Test func theBundledTableAnswersColdStartPerOSMajor() async throws {
        let bundled = try BundledHeightTable(data: Data(Self.table.utf8))
        #expect(bundled.coldStart(model: "iPhone17,1", os: "26.1") == Self.expected)
        #expect(bundled.coldStart(model: "iPhone17,1", os: "26") == Self.expected)
        #expect(bundled.coldStart(model: "iPhone17,1", os: "18.6.2")?.withPrewarm == nil)
        #expect(bundled.coldStart(model: "iPhone17,1", os: "17.0") == nil, "an entry of another shape reads as unknown")
        #expect(bundled.coldStart(model: "iPhone17,1", os: "27.0") == nil)
        #expect(bundled.coldStart(model: "iPhone16,2", os: "26.1") == nil, "tables from before cold_start")
        #expect(bundled.height(model: "iPhone17,1", screen: nil, language: "en-US", orientation: .portrait, keyboardType: .default) == 336)

        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // No answer from kbtd yet: the table decides.
        let fresh = Self.client(directory.appendingPathComponent("26"), Fixtures.refusing(), bundled: bundled)
        #expect(fresh.shouldPrewarmKeyboard())
        await fresh.shutdown()
        let older = Self.client(directory.appendingPathComponent("18"), Fixtures.refusing(), bundled: bundled,
                                device: TelemetryDevice(model: "iPhone17,1", os: "18.6"))
        #expect(!older.shouldPrewarmKeyboard())
        await older.shutdown()

        // kbtd's answer, once it came, wins over the table.
        let slow = KeyboardColdStart(withoutPrewarm: .init(p50Ms: 100, p90Ms: 300, samples: 50),
                                     withPrewarm: .init(p50Ms: 80, p90Ms: 200, samples: 50))
        let answered = Self.client(directory.appendingPathComponent("answered"),
                                   Self.serving(Self.heightsAnswer(#", "cold_start": {"without_prewarm": {"p50_ms": 100, "p90_ms": 300, "samples": 50}, "with_prewarm": {"p50_ms": 80, "p90_ms": 200, "samples": 50}}"#)),
                                   bundled: bundled)
        #expect(answered.shouldPrewarmKeyboard())
        #expect(await answered.refreshHeights() == .updated)
        #expect(answered.keyboardColdStart() == slow && !answered.shouldPrewarmKeyboard(), "20 ms saved: not worth it")
        await answered.shutdown()
    }

    @Test func aFailedFetchKeepsTheDefaultAndWaitsBeforeTryingAgain() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let clock = ManualClock()
        let transport = Fixtures.refusing()
        let client = KeyboardTelemetryClient(device: Fixtures.device, configuration: Fixtures.configuration(directory: directory),
                                             transport: transport, clock: clock)
        guard case .failed = await client.refreshHeights() else {
            Issue.record("a refused connection must fail the refresh")
            return
        }
        #expect(client.estimatedHeight(language: "en-US", orientation: .portrait) == 335)
        #expect(await client.refreshHeights() == .skipped, "within heightsRetryInterval")
        clock.advance(by: 15 * 60 + 1)
        guard case .failed = await client.refreshHeights() else {
            Issue.record("the second attempt must be made and fail")
            return
        }
        #expect(transport.requests.count == 2 && client.counters.heightsFailed == 2)
        await client.shutdown()
    }

    @Test func estimatedHeightAnswersWhileTheFetchHangs() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let transport = ScriptedTransport { _ in try await ScriptedTransport.hang() }
        var configuration = Fixtures.configuration(directory: directory)
        configuration.defaultPortraitHeight = 330
        let client = KeyboardTelemetryClient(device: Fixtures.device, configuration: configuration, transport: transport)
        client.start()  // begins GET /v1/heights, which hangs
        #expect(await eventually { transport.requests.count == 1 })
        var answers: [KeyboardHeightEstimate] = []
        for _ in 0..<1_000 { answers.append(client.heightEstimate(language: "en-US", orientation: .portrait)) }
        client.record(KeyboardSample(event: .show, height: 336, safeAreaBottom: 34, language: "ko-KR", orientation: .portrait))
        #expect(answers.allSatisfy { $0 == .init(height: 330, source: .configuredDefault) })
        #expect(client.heightEstimate(language: "ko-KR", orientation: .portrait) == .init(height: 336, source: .measured))
        #expect(!client.shouldPrewarmKeyboard())
        await client.shutdown()  // cancels the hanging fetch
        #expect(client.counters.heightsFetched == 0)
    }
}
