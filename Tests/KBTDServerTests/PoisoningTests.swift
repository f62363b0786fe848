import Foundation
import KBTDCore
import Testing

@Suite("Poisoning defence, answered in-process", .ownThreads, .timeLimit(.minutes(10)))
struct PoisoningTests {
    /// An honest fleet arrives through the trusted Unix socket; one address on
    /// TCP then posts 100,000 samples of 999 pt. No served height may move.
    @Test func oneAddressCannotMoveAServedHeight() async throws {
        let daemon = try InProcessApp(environment: [
            "KBTD_TRUSTED_PEERS": "unix", "KBTD_RATE_LIMIT_LOCAL_PEERS": "true",
        ])
        for model in ["iPhone17,1", "iPhone15,2", "iPhone13,2"] {
            for _ in 0..<10 {
                var samples = shows(8, height: 336) + shows(2, height: 291)  // bar mostly, some no-bar first shows
                if model != "iPhone17,1" { samples += shows(10, height: 344, language: "ja-JP") }
                let response = try await daemon.request(.post, "/v1/batches", headers: [("Content-Encoding", "gzip")],
                                                        body: gzip(batchBody(model: model, samples: samples)), from: "unix")
                #expect(response.status == 202)
            }
        }
        let queries = [
            "model=iPhone17,1&language=en-US&os=26.1",  // level 1, the attacked key
            "model=iPhone17,1&language=ja-JP",  // level 3 (language delta)
            "model=iPhone17,1&language=fr-FR",  // no data for fr-FR: the attacker's new key
            "model=iPhone15,2&language=en-US",
            "model=iPhone99,1&language=en-US",  // unknown model: default
        ]
        var before: [JSONValue?] = []
        for query in queries { before.append(try await daemon.get("/v1/height?" + query).json) }
        #expect(before[0]?["basis"] == .string("model+os+language") && before[0]?["height"] == .number(336))
        #expect(before[2]?["basis"] == .string("model"))
        #expect(before[4]?["basis"] == .string("default"))

        // The attack: 100 batches of 1,000 samples at 999 pt, for the attacked key,
        // a key with no honest data, and an unknown model, as fast as possible.
        var accepted = 0
        var limited = 0
        for round in 0..<100 {
            let (model, language) = [("iPhone17,1", "en-US"), ("iPhone17,1", "fr-FR"), ("iPhone99,1", "en-US")][round % 3]
            let response = try await daemon.post(gzip(batchBody(model: model, samples: shows(1_000, height: 999, language: language))),
                                           encoding: "gzip")
            #expect(response.status == 202 || response.status == 429)
            if response.status == 202 { accepted += response.json?["accepted"]?.double.map(Int.init) ?? 0 }
            if response.status == 429 { limited += 1 }
        }
        #expect(accepted >= 50_000, "the attacker's samples are stored and counted (\(accepted))")

        var after: [JSONValue?] = []
        for query in queries { after.append(try await daemon.get("/v1/height?" + query).json) }
        for (query, (old, new)) in zip(queries, zip(before, after)) {
            #expect(new?["height"] == old?["height"], "\(query): \(old?["height"] as Any) -> \(new?["height"] as Any)")
            #expect(new?["basis"] == old?["basis"], "\(query)")
        }
        // Transparency: stats show the attacker's samples; only the estimate ignores their weight.
        let row = try #require(statsRow(try daemon.stats(), model: "iPhone17,1", language: "fr-FR"))
        #expect(row["height_mode"] == .number(999))
        print("poisoning: \(accepted) samples of 999 pt accepted from one address (\(limited) batches rate limited); served heights unchanged")
    }

    @Test func threeIndependentSourcesAreNeededForAnUntrustedKey() throws {
        var policy = SourcePolicy(maxVotesPerSource: 5)
        var index = HeightIndex()
        let device = Device(model: "iPhone17,1", os: "26.1", osMajor: 26)
        for network in ["198.51.100.1", "198.51.100.1", "203.0.113.9"] {
            var delta = AggregateDelta()
            for _ in 0..<30 {
                delta.add(Sample(t: 0, event: .show, language: "en-US", orientation: .portrait, height: 336,
                                 duration: 0.25, curve: 7), device: device)
            }
            policy.apply(to: &delta, source: SourceID(network: network), now: 1_000_000)
            index.apply(delta)
        }
        let query = HeightQuery(model: "iPhone17,1", language: "en-US", osMajor: 26)
        // Two networks (the first twice, capped at 5 votes per day): not enough.
        #expect(HeightEstimator().estimate(query, in: index).basis == .default)
        var third = AggregateDelta()
        for _ in 0..<30 {
            third.add(Sample(t: 0, event: .show, language: "en-US", orientation: .portrait, height: 336,
                             duration: 0.25, curve: 7), device: device)
        }
        policy.apply(to: &third, source: SourceID(network: "2001:db8::/64"), now: 1_000_000)
        index.apply(third)
        let estimate = HeightEstimator().estimate(query, in: index)
        #expect(estimate.basis == .modelOSLanguage)
        #expect(estimate.height == 336)
        #expect(index.bySeries.values.first?.votes.total == 15)
        #expect(estimate.samples == 120)
    }
}
