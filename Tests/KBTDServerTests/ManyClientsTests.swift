import Foundation
import HTTPTypes
import KBTDCore
import Logging
import NIOCore
import Testing
@testable import KBTDServer

/// Many untrusted networks working together, and restarts: each attack of the
/// "many hostile clients" review gets its bound here. Loopback is a stranger
/// (`trusted_peers = unix`, rate limits on), and each client is its own
/// 127.x.y.z address, so one process plays hundreds of networks in-process.
@Suite("Many hostile clients together, and restarts")
struct ManyClientsTests {
    static let strangers = ["KBTD_TRUSTED_PEERS": "unix", "KBTD_RATE_LIMIT_LOCAL_PEERS": "true"]

    static func post(_ app: InProcessApp, from source: String, model: String = "iPhone17,1", os: String = "26.1",
                     screen: String? = nil, samples: [TestSample]) async throws -> HTTPTestResponse {
        try await app.request(.post, "/v1/batches", headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")],
                              body: gzip(batchBody(model: model, os: os, screen: screen, samples: samples)), from: source)
    }

    /// The `n`-th of many client networks, each in its own IPv4 /16 (127.N.M.1).
    static func network(_ n: Int) -> String { "127.\(1 + n % 250).\(n / 250).1" }

    // MARK: 1. the rendered-answer cache

    /// A model with hundreds of estimates (a large `/v1/heights` answer), asked with thousands of
    /// distinct `os` strings: before, the fast path kept a full copy per question (4,096 x the
    /// answer); now its rendered answers stay within `answer_cache_bytes`.
    @Test func renderedAnswersStayWithinTheirByteBound() async throws {
        let app = try InProcessApp(environment: ["KBTD_MAX_LANGUAGES_PER_MODEL": "1000"])
        // 300 languages x 2 orientations, 20 trusted samples each: 600 supported estimates.
        for chunk in 0..<6 {
            var samples: [TestSample] = []
            for language in (chunk * 50)..<((chunk + 1) * 50) {
                samples += shows(20, height: 336, language: "l\(language)-XX")
                samples += shows(20, height: 209, language: "l\(language)-XX", orientation: "landscape")
            }
            #expect(try await Self.post(app, from: "unix", samples: samples).status == 202)
        }
        let limit = 1 << 20
        let routes = HeightRoutes(heights: app.app.heights, settings: app.app.settings, metrics: app.app.metrics, limitBytes: limit)
        let answers = Front(heights: routes, ingest: app.app.ingest, rateLimit: app.app.rateLimit, auth: app.app.ingestAuth,
                            logger: Logger(label: "kbtd-test"))
        var largest = 0
        for minor in 0..<1_500 {
            let target = "/v1/heights?model=iPhone17,1&os=26.\(minor)"
            let buffer = try #require(answers.answer(target: target, ifNoneMatch: nil)?.body)
            largest = max(largest, buffer.readableBytes)
            if minor % 500 == 0 {
                #expect(String(buffer: buffer).contains("\"os\":\"26.\(minor)\""), "the asked os is echoed")
            }
            #expect(answers.renderedBytes <= limit, "after \(minor + 1) questions: \(answers.renderedBytes) bytes kept")
        }
        #expect(largest > 50_000, "the answer is large (\(largest) bytes): 1,500 copies would be \(1_500 * largest) bytes")
        // The live index's own cache (once per OS major) has its bound too.
        #expect(app.app.heights.cacheLimitBytes == 16 << 20)
    }

    @Test func anAnswerOfAnOlderGenerationIsDroppedWhenANewerOneIsStored() {
        let answers = RenderedAnswers(limitBytes: 1 << 20)
        let metrics = ServerMetrics()
        func entry(_ generation: UInt64) -> RenderedAnswers.Entry {
            .init(generation: generation, maxAge: 60, route: "/v1/height",
                  reply: .init(status: .ok, headers: [:], body: Array(repeating: 0x20, count: 1_000)), metrics: metrics)
        }
        for n in 0..<100 { answers.store(entry(1), key: "q\(n)") }
        #expect(answers.count == 100)
        answers.store(entry(2), key: "fresh")
        #expect(answers.count == 1, "a newer generation retires every older answer at once")
        answers.store(entry(1), key: "late")
        #expect(answers.count == 1 && answers.entry("late", generation: 1, maxAge: 60) == nil, "a stale answer is not kept")
        answers.store(.init(generation: 2, maxAge: 60, route: "/v1/heights",
                            reply: .init(status: .ok, headers: [:], body: Array(repeating: 0x20, count: 300_000)), metrics: metrics),
                      key: "huge")
        #expect(answers.entry("huge", generation: 2, maxAge: 60) == nil, "an answer over a quarter of the bound is sent, not kept")
        #expect(answers.bytes <= 1 << 20)
    }

    // MARK: 7. canonical routing

    /// The router matches `/v1/height/`, `//v1/height` and `/v1//height` to the `/v1/height` route;
    /// before, the reply compared the raw path and answered them with the `/v1/heights` document.
    @Test(arguments: ["/v1/height/", "//v1/height", "/v1//height"])
    func everySpellingOfARouteGetsThatRoutesAnswer(_ path: String) async throws {
        let app = try InProcessApp()
        let query = "?model=iPhone17,1&language=en-US&os=26.1"
        let canonical = try await app.get("/v1/height" + query)
        let variant = try await app.get(path + query)
        #expect(variant.status == 404 || (variant.status == canonical.status && variant.text == canonical.text),
                "\(path): \(variant.status) \(variant.text.prefix(80))")
        #expect(variant.json?["estimates"] == nil, "never the /v1/heights document")
        let plural = path.replacingOccurrences(of: "height", with: "heights")
        let heights = try await app.get("/v1/heights?model=iPhone17,1")
        let heightsVariant = try await app.get(plural + "?model=iPhone17,1")
        #expect(heightsVariant.status == 404 || heightsVariant.text == heights.text, "\(plural)")
    }

    // MARK: 2 and 5. the day's ledger

    /// Three honest networks back 346 pt (15 votes). One attacker network votes 360 pt, the day's
    /// budget for that bin spent, then the daemon restarts twice and it votes again each time:
    /// before, every restart forgot the ledger and gave it a fresh budget, and its 15 votes tied
    /// the honest 15 and won the tie.
    /// The new-key quota is kept the same way.
    @Test func aRestartForgetsNeitherTheVoteLedgerNorTheNewKeyQuota() async throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = directory.appendingPathComponent("kbtd.sqlite").path
        let environment = Self.strangers.merging(["KBTD_MAX_NEW_KEYS_PER_SOURCE_PER_DAY": "5"]) { $1 }
        let query = "/v1/height?model=iPhone17,1&language=en-US&os=26.1"
        var app = try InProcessApp(environment: environment, database: database)
        for source in ["127.0.1.2", "127.0.2.3", "127.0.3.4"] {
            #expect(try await Self.post(app, from: source, samples: shows(10, height: 346)).status == 202)
        }
        #expect(try await app.get(query).json?["height"] == .number(346), "15 honest votes from 3 networks")
        let attacker = "127.0.9.9"
        // Its first batch also spends its new-key quota (5 new languages).
        #expect(try await Self.post(app, from: attacker, samples: shows(5, height: 360)
                    + (0..<5).flatMap { shows(1, height: 346, language: "q\($0)-XX") }).status == 202)
        #expect(try await app.get(query).json?["height"] == .number(346), "5 votes do not outvote 15")
        for round in 0..<2 {
            await app.app.shutdown()
            app = try await InProcessApp.reopened(environment: environment, database: database)
            let response = try await Self.post(app, from: attacker, samples: shows(5, height: 360)
                                               + shows(1, height: 346, language: "r\(round)-XX"))
            #expect(response.status == 202)
            #expect(response.json?["errors"]?.array?.first?["field"] == .string("key"),
                    "round \(round): the quota spent before the restart stays spent")
            #expect(try await app.get(query).json?["height"] == .number(346),
                    "round \(round): the attacker's spent votes stay spent across the restart")
        }
        await app.app.shutdown()
    }

    /// About 30 networks each opening their whole daily budget of ledger entries filled the
    /// ledger, and every honest untrusted vote got no weight until midnight. Now the open region
    /// is shared per /16, and a reserve stays open to networks that opened few entries.
    @Test func aFewDozenNetworksCannotFillTheLedgerForEveryoneElse() {
        var policy = SourcePolicy(maxVotesPerSource: 5)
        policy.maxTracked = 20_000
        policy.maxEntriesPerSource = 1_000
        let now = 1_000_000.0
        let device = Device(model: "iPhone17,1", os: "26.1", osMajor: 26)
        // 60 attacker networks (each in its own /16) open their whole budget, 60,000 entries.
        for attacker in 0..<60 {
            var junk = AggregateDelta()
            for bin in 0..<1_000 {
                let series = SeriesKey(model: "iPhone17,1", osMajor: 26, language: "a\(attacker)-\(bin % 20)",
                                       orientation: .portrait, keyboardType: "default")
                junk.votes[SeriesBin(series: series, halfPoints: 400 + bin)] = 1
            }
            let source = SourceID(network: Self.network(attacker))
            policy.apply(to: &junk, source: source, group: SourceID(network: "g\(attacker)"), now: now)
        }
        #expect(policy.trackedEntries <= policy.maxTracked + policy.maxReserve, "bounded: \(policy.trackedEntries)")
        // 200 honest networks, a phone each: every one still gets its votes.
        var honestVotes: Int64 = 0
        for honest in 0..<200 {
            var delta = AggregateDelta()
            for _ in 0..<3 {
                delta.add(Sample(t: 0, event: .show, language: "en-US", orientation: .portrait, height: 346,
                                 duration: 0.25, curve: 7), device: device)
            }
            policy.apply(to: &delta, source: SourceID(network: "198.51.\(honest).7"),
                         group: SourceID(network: "198.51.\(honest)"), now: now)
            honestVotes += delta.votes.values.reduce(0, +)
        }
        #expect(honestVotes == 600, "every honest network's 3 votes count: \(honestVotes) of 600")
        // One attacker group cannot take the reserve either: 500 networks of one /16 get at most its share.
        var grouped = 0
        for n in 0..<500 {
            var delta = AggregateDelta()
            let series = SeriesKey(model: "iPhone17,2", osMajor: 26, language: "en-US", orientation: .portrait, keyboardType: "default")
            delta.votes[SeriesBin(series: series, halfPoints: 700)] = 1
            let increments = policy.apply(to: &delta, source: SourceID(network: "203.0.\(n % 250).\(n / 250)"),
                                          group: SourceID(network: "203.0/16"), now: now)
            grouped += increments.count
        }
        #expect(grouped <= policy.maxReservePerGroup, "one /16 in the reserve: \(grouped) entries")
    }

    /// The ledger a store persisted restores the same budgets: a source that spent its bin cannot vote on it again.
    @Test func aRestoredLedgerKeepsEverySpentBudget() {
        var policy = SourcePolicy(maxVotesPerSource: 5)
        let now = 1_000_000.0
        let source = SourceID(network: "198.51.100.1"), group = SourceID(network: "198.51.0.0/16")
        let series = SeriesKey(model: "iPhone17,1", osMajor: 26, language: "en-US", orientation: .portrait, keyboardType: "default")
        var delta = AggregateDelta()
        delta.votes[SeriesBin(series: series, halfPoints: 692)] = 9
        let increments = policy.apply(to: &delta, source: source, group: group, now: now)
        #expect(increments.map(\.votes) == [5])
        var restored = SourcePolicy(maxVotesPerSource: 5)
        restored.restore(day: SourcePolicy.day(of: now), increments)
        var again = AggregateDelta()
        again.votes[SeriesBin(series: series, halfPoints: 692)] = 9
        #expect(restored.apply(to: &again, source: source, group: group, now: now).isEmpty)
        #expect(again.votes.isEmpty, "the bin's 5 votes were spent before the restart")
        // The next UTC day starts over.
        var tomorrow = AggregateDelta()
        tomorrow.votes[SeriesBin(series: series, halfPoints: 692)] = 9
        #expect(restored.apply(to: &tomorrow, source: source, group: group, now: now + 86_400).map(\.votes) == [5])
    }

    // MARK: 6. outvoting

    /// Ties went to the taller height, so an attacker matching the honest votes with a taller
    /// height won. Now a tie keeps the height served before it; only strictly more votes move it.
    @Test func aTieKeepsTheServedHeight() async throws {
        let app = try InProcessApp(environment: Self.strangers)
        let query = "/v1/height?model=iPhone17,1&language=en-US&os=26.1"
        for n in 0..<3 {
            #expect(try await Self.post(app, from: Self.network(n), samples: shows(10, height: 346)).status == 202)
        }
        #expect(try await app.get(query).json?["height"] == .number(346))
        for n in 3..<6 {
            #expect(try await Self.post(app, from: Self.network(n), samples: shows(10, height: 360)).status == 202)
        }
        #expect(try await app.get(query).json?["height"] == .number(346), "15 votes against 15: the served height stays")
        #expect(try await Self.post(app, from: Self.network(6), samples: shows(10, height: 360)).status == 202)
        #expect(try await app.get(query).json?["height"] == .number(360), "20 against 15: a majority of networks moves it")
    }

    @Test func aTieInOneMergeGoesToTheTallerBinAndAnIncumbentKeepsItsTie() {
        var histogram = CountHistogram()
        histogram.merge(CountHistogram([692: 15, 720: 15]), limit: 8, keepingTies: true)
        #expect(histogram.mode == 720, "no earlier mode: the taller bin")
        var served = CountHistogram()
        served.merge(CountHistogram([692: 15]), limit: 8, keepingTies: true)
        served.merge(CountHistogram([720: 15]), limit: 8, keepingTies: true)
        #expect(served.mode == 692)
        served.merge(CountHistogram([600: 15]), limit: 8, keepingTies: true)
        #expect(served.mode == 692, "still tied at the top: the incumbent keeps it")
        var summed = served
        summed.merge(CountHistogram([500: 1]), limit: 8)
        #expect(summed.mode == 720, "levels summed for a question keep no history: the taller bin")
        served.merge(CountHistogram([600: 1]), limit: 8, keepingTies: true)
        #expect(served.mode == 600)
        #expect(served == CountHistogram([692: 15, 720: 15, 600: 16]), "equality is content only")
    }

    // MARK: 6. implausible heights

    /// 999 pt was accepted as a phone keyboard's height and could be voted in. It is still stored
    /// (the contract accepts 0...2000) but carries no weight: taller than any keyboard, or than
    /// 85% of the reporting device's screen side.
    @Test func implausibleHeightsCarryNoWeight() async throws {
        #expect(!SourcePolicy.plausible(halfPoints: 1998, orientation: .portrait, screen: nil))
        #expect(SourcePolicy.plausible(halfPoints: 692, orientation: .portrait, screen: ScreenSize(width: 393, height: 852)))
        #expect(!SourcePolicy.plausible(halfPoints: 692, orientation: .landscape, screen: ScreenSize(width: 393, height: 852)),
                "346 pt in landscape on a 393 pt tall side")
        #expect(SourcePolicy.plausible(halfPoints: 500, orientation: .landscape, screen: ScreenSize(width: 320, height: 568)),
                "250 pt: an SE's landscape keyboard with a candidate bar")
        let app = try InProcessApp(environment: Self.strangers)
        let query = "/v1/height?model=iPhone17,1&language=en-US&os=26.1"
        for n in 0..<3 {
            #expect(try await Self.post(app, from: Self.network(n), samples: shows(10, height: 346)).status == 202)
        }
        #expect(try await app.get(query).json?["height"] == .number(346))
        for n in 3..<13 {
            #expect(try await Self.post(app, from: Self.network(n), samples: shows(5, height: 999)).status == 202)
            // 500 pt is a keyboard on an iPad, not on a 568 pt tall phone.
            #expect(try await Self.post(app, from: Self.network(n + 100), screen: "320x568",
                                        samples: shows(5, height: 500)).status == 202)
        }
        #expect(try await app.get(query).json?["height"] == .number(346), "100 votes for 999 pt and 500 pt: no weight")
        #expect(try await app.metric("kbtd_votes_implausible_today") == 100)
    }
}
