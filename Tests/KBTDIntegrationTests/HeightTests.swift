import Foundation
import KBTDCore
import Testing

@Suite("Heights, answered in-process", .ownThreads, .timeLimit(.minutes(10)))
struct HeightTests {
    /// A fleet built so every level of the chain answers one question.
    static func loadChainFleet(into daemon: InProcessApp) async throws {
        let batches: [(model: String, os: String, samples: [TestSample])] = [
            ("iPhone17,1", "26.1", shows(25, height: 336)),
            ("iPhone17,1", "18.6.2", shows(30, height: 330)),
            ("iPhone17,1", "26.1", shows(5, height: 350, language: "fr-FR")),
            ("iPhone15,2", "26.0", shows(40, height: 336) + shows(40, height: 344, language: "ja-JP")),
            ("iPhone13,2", "26.0", shows(40, height: 336) + shows(40, height: 346, language: "ja-JP")),
            // Three models show that iOS 26 moved en-US keyboards by 6 pt, so levels 3 and 4 are OS-aware.
            ("iPhone15,2", "18.6.2", shows(30, height: 330)),
            ("iPhone13,2", "18.6.2", shows(30, height: 330)),
        ]
        for batch in batches {
            let response = try await daemon.post(gzip(batchBody(model: batch.model, os: batch.os, samples: batch.samples)), encoding: "gzip")
            #expect(response.status == 202)
        }
    }

    static let chain: [(query: String, basis: String, height: Double, samples: Double, cli: [String])] = [
        ("model=iPhone17,1&language=en-US&os=26.1", "model+os+language", 336, 25, ["--os", "26.1"]),
        ("model=iPhone17,1&language=en-US&os=17.0", "model+language", 330, 55, ["--os", "17.0"]),
        // OS-aware: iPhone17,1's en-US on iOS 26 (336, not the any-OS mode 330) plus ja-JP's difference on iOS 26.
        ("model=iPhone17,1&language=ja-JP&os=26.1", "model+language-delta", 344, 25, ["--os", "26.1"]),
        ("model=iPhone17,1&language=ja-JP", "model+language-delta", 338, 55, []),
        ("model=iPhone17,1&language=fr-FR", "model", 330, 60, []),
        ("model=iPhone99,9&language=en-US", "default", 335, 0, []),
        ("model=iPhone99,9&language=en-US&orientation=landscape", "default", 209, 0, ["--orientation", "landscape"]),
    ]

    @Test func everyLevelOfTheChainIsReachedAndTheCLIAgrees() async throws {
        let daemon = try InProcessApp()
        try await Self.loadChainFleet(into: daemon)
        for level in Self.chain {
            let response = try await daemon.get("/v1/height?" + level.query)
            #expect(response.status == 200)
            #expect(response.json?["basis"] == .string(level.basis), "\(level.query): \(response.text)")
            #expect(response.json?["height"] == .number(level.height), "\(level.query): \(response.text)")
            #expect(response.json?["samples"] == .number(level.samples), "\(level.query): \(response.text)")
            #expect(response.header("cache-control") == "public, max-age=3600")

            let parameters = Dictionary(uniqueKeysWithValues: level.query.split(separator: "&").map {
                let pair = $0.split(separator: "=", maxSplits: 1)
                return (String(pair[0]), String(pair[1]))
            })
            let cli = try runKBTD(["height", "--model", parameters["model"]!, "--language", parameters["language"]!,
                                   "--database", daemon.database] + level.cli)
            #expect(cli.status == 0, "\(cli.stderr)")
            #expect(cli.stdout == response.text + "\n", "kbtd height must print what the endpoint serves")
        }
    }

    @Test func minSamplesIsConfigurable() async throws {
        let daemon = try InProcessApp(environment: ["KBTD_MIN_SAMPLES": "26"])
        try await Self.loadChainFleet(into: daemon)
        // 25 samples at os 26 no longer suffice; model+language (55) still does.
        let response = try await daemon.get("/v1/height?model=iPhone17,1&language=en-US&os=26.1")
        #expect(response.json?["basis"] == .string("model+language"))
    }

    @Test func etagRevalidatesAndChangesWithData() async throws {
        let daemon = try InProcessApp()
        try await Self.loadChainFleet(into: daemon)
        let path = "/v1/height?model=iPhone17,1&language=en-US&os=26.1"
        let first = try await daemon.get(path)
        let etag = try #require(first.header("etag"))
        let revalidated = try await daemon.get(path, headers: [("If-None-Match", etag)])
        #expect(revalidated.status == 304)
        #expect(revalidated.body.isEmpty)
        #expect(revalidated.header("etag") == etag)

        #expect(try await daemon.post(gzip(batchBody(samples: shows(30, height: 340))), encoding: "gzip").status == 202)
        let changed = try await daemon.get(path, headers: [("If-None-Match", etag)])
        #expect(changed.status == 200)
        #expect(changed.json?["height"] == .number(340))
        #expect(changed.header("etag") != etag)
    }

    @Test func allHeightsForOneModel() async throws {
        let daemon = try InProcessApp()
        try await Self.loadChainFleet(into: daemon)
        let response = try await daemon.get("/v1/heights?model=iPhone17,1&os=26.1")
        #expect(response.status == 200)
        #expect(response.header("etag") != nil)
        let json = try #require(response.json)
        #expect(json["model"] == .string("iPhone17,1"))
        #expect(json["os"] == .string("26.1"))
        let estimates = json["estimates"]?.array ?? []
        // fr-FR has 5 samples on this model: too few to answer from its own data, so it is not listed.
        #expect(estimates.map { $0["language"]?.string ?? "" } == ["en-US"])
        #expect(estimates.first?["basis"] == .string("model+os+language"))
        #expect(estimates.first?["height"] == .number(336))
        #expect(json["default"]?["portrait"]?["basis"] == .string("model"))
        #expect(json["default"]?["landscape"]?["basis"] == .string("default"))
        #expect(json["default"]?["landscape"]?["height"] == .number(209))
    }
}
