import Foundation
import KBTDCore
import Testing

/// `GET /v1/heights` serves a model's first-show latency back, without and with pre-warming
/// (`cold_start`), under the support a height needs, and `kbtd export` carries it per OS major.
@Suite("Cold starts in /v1/heights and the export", .ownThreads)
struct ColdStartAnswerTests {
    /// One network's batch: `cold` cold starts at `coldMs` and `prewarmed` pre-warmed ones at
    /// `prewarmedMs`, each a ja-JP show at 380 pt.
    static func batch(model: String, os: String, cold: Int, coldMs: Double, prewarmed: Int, prewarmedMs: Double) -> [UInt8] {
        let samples = (0..<cold).map { _ in TestSample(language: "ja-JP", height: 380, coldStartMs: coldMs, preloaded: false) }
            + (0..<prewarmed).map { _ in TestSample(language: "ja-JP", height: 380, coldStartMs: prewarmedMs, preloaded: true) }
        return gzip(batchBody(model: model, os: os, samples: samples))
    }

    static func heights(_ app: InProcessApp, _ model: String, os: String) async throws -> JSONValue {
        let response = try await app.get("/v1/heights?model=\(model)&os=\(os)")
        #expect(response.status == 200)
        return try JSONParser.parse(response.body)
    }

    @Test func aSupportedModelGetsItsColdStartsAndAThinOneNone() async throws {
        let app = try InProcessApp()
        // iPhone17,1: three networks, 30 cold starts near 400 ms and 24 pre-warmed near 40 ms on 26.
        for network in 1...3 {
            let response = try await app.post(Self.batch(model: "iPhone17,1", os: "26.1", cold: 10, coldMs: 400,
                                                         prewarmed: 8, prewarmedMs: 40),
                                              encoding: "gzip", from: "10.\(network).0.1")
            #expect(response.status == 202)
        }
        // iPhone16,2: as many samples from two networks only (min_sources is 3).
        for network in 1...2 {
            let response = try await app.post(Self.batch(model: "iPhone16,2", os: "26.1", cold: 15, coldMs: 500,
                                                         prewarmed: 12, prewarmedMs: 50),
                                              encoding: "gzip", from: "10.\(network).0.1")
            #expect(response.status == 202)
        }
        // iPhone15,2: three networks, but only 15 pre-warmed starts (min_samples is 20).
        for network in 1...3 {
            let response = try await app.post(Self.batch(model: "iPhone15,2", os: "26.0", cold: 8, coldMs: 600,
                                                         prewarmed: 5, prewarmedMs: 60),
                                              encoding: "gzip", from: "10.\(network).0.1")
            #expect(response.status == 202)
        }

        let body = try await Self.heights(app, "iPhone17,1", os: "26.1")
        let coldStart = try #require(body["cold_start"], "\(body)")
        let cold = try #require(coldStart["without_prewarm"]), prewarmed = try #require(coldStart["with_prewarm"])
        // Log buckets of 1% relative accuracy.
        #expect(abs(try #require(cold["p50_ms"]?.double) - 400) <= 4, "\(cold)")
        #expect(abs(try #require(cold["p90_ms"]?.double) - 400) <= 4, "\(cold)")
        #expect(cold["samples"]?.double == 30)
        #expect(abs(try #require(prewarmed["p50_ms"]?.double) - 40) <= 0.5, "\(prewarmed)")
        #expect(prewarmed["samples"]?.double == 24)
        // Without os: every major together (26 only here); on another major: nothing.
        let anyOS = try JSONParser.parse(try await app.get("/v1/heights?model=iPhone17,1").body)
        #expect(anyOS["cold_start"] == coldStart, "\(anyOS)")
        #expect(try await Self.heights(app, "iPhone17,1", os: "18.6")["cold_start"] == nil)
        let thin = try await Self.heights(app, "iPhone16,2", os: "26.1")
        #expect(thin["cold_start"] == nil, "two networks are not enough: \(thin)")
        let half = try await Self.heights(app, "iPhone15,2", os: "26.0")
        #expect(half["cold_start"]?["without_prewarm"]?["samples"]?.double == 24, "\(half)")
        #expect(half["cold_start"]?["with_prewarm"] == nil, "15 pre-warmed starts are not enough: \(half)")

        // The export carries the same object per OS major.
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let document = try app.export(to: directory.appendingPathComponent("kbtd-heights.json"))
        #expect(document["models"]?["iPhone17,1"]?["cold_start"]?["26"] == coldStart)
        #expect(document["models"]?["iPhone16,2"]?["cold_start"] == nil)

        // A restart loads the same figures from the store.
        let database = app.database
        await app.app.shutdown()
        let again = try await InProcessApp.reopened(database: database)
        #expect(try await Self.heights(again, "iPhone17,1", os: "26.1")["cold_start"] == coldStart)
        await again.app.shutdown()
    }
}
