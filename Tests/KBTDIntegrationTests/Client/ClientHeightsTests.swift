import Foundation
import KBTDCore
import KeyboardTelemetryClient
import Testing

/// `estimatedHeight` against the live daemon: measured, then kbtd's answer (ETag-revalidated, at most
/// every N hours), then the default; from memory, never from the network. (Answers while a fetch
/// hangs or fails, and the cold-start figures, are the client package's own tests.)
@Suite("KeyboardTelemetryClient heights cache", .ownThreads, .timeLimit(.minutes(10)))
struct ClientHeightsTests {
    static let device = TelemetryDevice(model: "iPhone15,2", os: "26.1")

    @Test func learnsKbtdsAnswersRevalidatesWithETagAndKeepsThemAcrossLaunches() async throws {
        let daemon = try TestDaemon().start()
        #expect(try daemon.post(gzip(batchBody(model: "iPhone15,2", samples: shows(25, height: 336))), encoding: "gzip").status == 202)
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let transport = RecordingTransport()
        let clock = ManualClock()
        let client = KeyboardTelemetryClient(
            device: Self.device, configuration: ClientFixtures.configuration(port: daemon.port, directory: directory),
            transport: transport, clock: clock)

        // Nothing known yet: the configured defaults.
        #expect(client.heightEstimate(language: "en-US", orientation: .portrait) == .init(height: 335, source: .configuredDefault))
        #expect(client.estimatedHeight(language: "en-US", orientation: .landscape) == 209)

        #expect(await client.refreshHeights() == .updated)
        #expect(client.heightEstimate(language: "en-US", orientation: .portrait)
            == .init(height: 336, source: .server(basis: "model+os+language")))
        // A language kbtd has not seen on this model: its answer for the model.
        #expect(client.heightEstimate(language: "ja-JP", orientation: .portrait) == .init(height: 336, source: .server(basis: "model")))
        #expect(client.heightEstimate(language: "en-US", orientation: .landscape) == .init(height: 209, source: .server(basis: "default")))
        let first = try #require(transport.exchanges.last)
        let etag = try #require(first.responseHeaders["etag"])
        #expect(first.request.url.query?.contains("model=iPhone15,2") == true && first.request.headers["If-None-Match"] == nil)

        // Within the refresh interval: no request at all.
        #expect(await client.refreshHeights() == .skipped)
        #expect(transport.requestsStarted == 1)

        // Twelve hours later: revalidated with If-None-Match, answered 304.
        clock.advance(by: 12 * 3600 + 1)
        #expect(await client.refreshHeights() == .notModified)
        let second = try #require(transport.exchanges.last)
        #expect(second.request.headers["If-None-Match"] == etag && second.status == 304)
        #expect(client.counters.heightsFetched == 1 && client.counters.heightsNotModified == 1)

        // New data changes kbtd's answer and its ETag.
        #expect(try daemon.post(gzip(batchBody(model: "iPhone15,2", samples: shows(30, height: 344, language: "ja-JP"))),
                                encoding: "gzip").status == 202)
        #expect(await client.refreshHeights(force: true) == .updated)
        let third = try #require(transport.exchanges.last)
        #expect(third.request.headers["If-None-Match"] == etag && third.status == 200 && third.responseHeaders["etag"] != etag)
        #expect(client.heightEstimate(language: "ja-JP", orientation: .portrait)
            == .init(height: 344, source: .server(basis: "model+os+language")))

        // The device's own measurement wins (accessory view removed).
        client.record(KeyboardSample(event: .show, height: 390, accessoryHeight: 44, safeAreaBottom: 34,
                                     language: "en-US", orientation: .portrait))
        #expect(client.heightEstimate(language: "en-US", orientation: .portrait) == .init(height: 346, source: .measured))
        await client.shutdown()

        // Next launch, offline: everything is answered from the cache on disk.
        let offline = KeyboardTelemetryClient(device: Self.device,
                                                  configuration: ClientFixtures.configuration(port: unreachablePort(), directory: directory),
                                                  clock: clock)
        await offline.waitUntilLoaded()  // the cache loads on the client's own task, right after init
        #expect(offline.heightEstimate(language: "en-US", orientation: .portrait) == .init(height: 346, source: .measured))
        #expect(offline.heightEstimate(language: "ja-JP", orientation: .portrait).height == 344)
        #expect(await offline.refreshHeights() == .skipped, "fetched less than 12 hours ago")
        await offline.shutdown()

        // After an OS update the old heights no longer apply.
        let updated = KeyboardTelemetryClient(device: TelemetryDevice(model: "iPhone15,2", os: "26.2"),
                                                  configuration: ClientFixtures.configuration(port: unreachablePort(), directory: directory))
        await updated.waitUntilLoaded()
        #expect(updated.heightEstimate(language: "en-US", orientation: .portrait) == .init(height: 335, source: .configuredDefault))
        await updated.shutdown()
    }
}
