import Foundation
import KBTDCore
@testable import KBTDPostgres
import KBTDStore
import Testing

/// A key whose height changes with no release change converges to the new
/// height once the old votes leave `vote_horizon_days`, on both stores and after a restart,
/// while the counts operators read stay all-time totals.
@Suite("Ageing votes: old data stops outvoting new (schema v10)", .ownThreads, .serialized)
struct VoteAgeTests {
    static let day: Int64 = 86_400
    static let today: Int64 = 20_000 * day + 3_600
    static let model = "iPhone17,1"

    /// One untrusted network's batch of `count` docked ja-JP (or `language`) shows at `height`,
    /// weighed by a `SourcePolicy` with `cap` votes per (key, bin, day) and tagged with its release
    /// and receipt day as ingest tags it.
    static func batch(_ id: String, at receivedAt: Int64, network: String, height: Double, count: Int,
                      language: String = "ja-JP", cap: Int64 = 5) -> PendingBatch {
        var delta = AggregateDelta()
        let device = Device(model: model, os: "26.1", osMajor: 26)
        for _ in 0..<count {
            delta.add(Sample(t: 0, event: .show, language: language, orientation: .portrait, height: height,
                             safeAreaBottom: 34, duration: 0.25, curve: 7), device: device)
        }
        let source = SourceID(network: network)
        var policy = SourcePolicy(maxVotesPerSource: cap)
        policy.apply(to: &delta, source: source, now: Double(receivedAt))
        delta.recordRelease(os: "26.1")
        delta.recordDay(receivedAt: receivedAt)
        var batch = PendingBatch(batchID: id, receivedAt: receivedAt, model: model, os: "26.1", accepted: count, rejected: 0,
                                 delta: delta)
        batch.source = source
        return batch
    }

    /// 1,500 samples at `old` from 10 networks (150 votes each: the worst case, every sample weighs),
    /// received `ageDays` days ago; then 300 at `new` from 6 networks today (capped to 5 votes each).
    static func history(language: String, old: Double, new: Double, ageDays: Int64) -> [[PendingBatch]] {
        let then = today - ageDays * day
        let oldBatches = (0..<10).map { i in
            batch("\(language)-old-\(i)", at: then + Int64(i), network: "10.1.\(i).0", height: old, count: 150,
                  language: language, cap: 1_000)
        }
        let newBatches = (0..<6).map { i in
            batch("\(language)-new-\(i)", at: today + Int64(i), network: "10.2.\(i).0", height: new, count: 50, language: language)
        }
        return [oldBatches, newBatches]
    }

    static func query(_ language: String) -> HeightQuery {
        HeightQuery(model: model, language: language, osMajor: 26, osMinor: 1)
    }

    static func unaged() -> HeightEstimator {
        var settings = EstimatorSettings()
        settings.voteHorizonDays = 0
        return HeightEstimator(settings: settings)
    }

    @Test(arguments: StoreKind.available)
    func aKeyThatMovedWithNoReleaseConvergesWithinTheHorizonAndAfterARestart(kind: StoreKind) async throws {
        let subject = try StoreUnderTest(kind)
        var live = HeightIndex()
        var stored: Int64 = 0
        do {
            let store = try await subject.open()
            for commit in Self.history(language: "ja-JP", old: 380, new: 384, ageDays: 25)
                + Self.history(language: "en-US", old: 336, new: 336, ageDays: 25) {
                for batch in commit {
                    let result = try await store.commit([batch])
                    #expect(result.stored == [true])
                    live.apply(result.added)
                    stored += Int64(batch.accepted)
                }
            }
            // A retry adds nothing, to the days' votes either.
            let retry = Self.history(language: "ja-JP", old: 380, new: 384, ageDays: 25)[1][0]
            #expect(try await store.commit([retry]).stored == [false])
        }
        let estimator = HeightEstimator()
        let moved = estimator.estimate(Self.query("ja-JP"), in: live)
        #expect(moved.height == 384 && moved.basis == .modelOSLanguage, "\(moved)")
        #expect(moved.samples == 1_800, "samples stay the key's true docked total")
        // Without ageing (vote_horizon_days = 0: the estimator as it was) the old votes win.
        #expect(Self.unaged().estimate(Self.query("ja-JP"), in: live).height == 380)
        // A steady key answers exactly as without ageing.
        let steady = estimator.estimate(Self.query("en-US"), in: live)
        #expect(steady.height == 336 && steady == Self.unaged().estimate(Self.query("en-US"), in: live))

        // A restart: the index rebuilt from the store answers the same.
        let reopened = try await subject.open()
        var rebuilt = HeightIndex()
        rebuilt.apply(try await reopened.loadIndexCounts())
        #expect(estimator.estimate(Self.query("ja-JP"), in: rebuilt) == moved)
        #expect(estimator.estimate(Self.query("en-US"), in: rebuilt) == steady)
        #expect(rebuilt.latestVoteDay == Int(Self.today / Self.day))
        // Operators' counts stay all-time totals.
        let totals = try await reopened.statsTotals(StatsFilter())
        #expect(totals.samples == stored)
        let key = SeriesKey(model: Self.model, osMajor: 26, language: "ja-JP", orientation: .portrait, keyboardType: "default")
        #expect(rebuilt.series(key)?.heights.total == 1_800)
        #expect(rebuilt.series(key)?.votes.mode == HeightBin.halfPoints(380), "the all-time votes are untouched")
    }

    /// The stores' hourly upkeep (`pruneBatchIDs`) deletes the days of votes older than the index
    /// keeps (`HeightIndex.oldestDayKept`), counted back from the latest day of data: the rows go,
    /// every other count stays, and the index rebuilt from the store answers exactly as before.
    @Test(arguments: StoreKind.available)
    func daysOlderThanTheIndexKeepsArePrunedAndAnswersStay(kind: StoreKind) async throws {
        let subject = try StoreUnderTest(kind)
        let store = try await subject.open()
        // 40 days of data, 4 networks a day: 380 for 30 days, then 384 for the last 10.
        for age in (0..<40).reversed() {
            let batches = (0..<4).map { n in
                Self.batch("prune-\(age)-\(n)", at: Self.today - Int64(age) * Self.day + Int64(n), network: "10.4.\(n).0",
                           height: age >= 10 ? 380 : 384, count: 10, cap: 1_000)
            }
            #expect(try await store.commit(batches).stored == [true, true, true, true])
        }
        let latest = Int(Self.today / Self.day)
        let before = try await store.loadIndexCounts()
        #expect(before.dayVotes.keys.map(\.day).min() == latest - 39, "all 40 days are stored before the upkeep")
        var unpruned = HeightIndex()
        unpruned.apply(before)

        _ = try await store.pruneBatchIDs(receivedBefore: 0)
        let after = try await store.loadIndexCounts()
        let oldest = HeightIndex.oldestDayKept(latest: latest)
        #expect(oldest == latest - 30)
        #expect(after.dayVotes.keys.map(\.day).min() == oldest && after.dayVotes.keys.map(\.day).max() == latest)
        #expect(after.dayVotes == before.dayVotes.filter { $0.key.day >= oldest }, "only the days before the kept month went")
        #expect(!after.daySources.isEmpty && after.daySources == before.daySources.filter { $0.key.day >= oldest },
                "the days' sources go with their votes")
        var rest = after, rest0 = before
        rest.dayVotes = [:]
        rest0.dayVotes = [:]
        rest.daySources = [:]
        rest0.daySources = [:]
        #expect(rest == rest0, "every other count stays")

        var pruned = HeightIndex()
        pruned.apply(after)
        let key = SeriesKey(model: Self.model, osMajor: 26, language: "ja-JP", orientation: .portrait, keyboardType: "default")
        #expect(pruned.recentVotes(of: key, sinceDay: 0) == unpruned.recentVotes(of: key, sinceDay: 0))
        for estimator in [HeightEstimator(), Self.unaged()] {
            #expect(estimator.estimate(Self.query("ja-JP"), in: pruned) == estimator.estimate(Self.query("ja-JP"), in: unpruned))
        }
        #expect(HeightEstimator().estimate(Self.query("ja-JP"), in: pruned).height == 384, "the last 14 days answer")
        #expect(Self.unaged().estimate(Self.query("ja-JP"), in: pruned).height == 380, "the all-time votes stay")
        // A second upkeep finds nothing more to delete.
        _ = try await store.pruneBatchIDs(receivedBefore: 0)
        #expect(try await store.loadIndexCounts().dayVotes == after.dayVotes)
    }

    /// The horizon bounds the wait: old votes inside it still count, so new data must outvote them
    /// there; once they are older than the horizon, the new height answers.
    @Test func theOldHeightHoldsWhileItsVotesAreInsideTheHorizon() {
        func index(ageDays: Int64) -> HeightIndex {
            var index = HeightIndex()
            for batch in Self.history(language: "ja-JP", old: 380, new: 384, ageDays: ageDays).joined() { index.apply(batch.delta) }
            return index
        }
        let estimator = HeightEstimator()
        #expect(estimator.estimate(Self.query("ja-JP"), in: index(ageDays: 10)).height == 380, "old votes within 14 days")
        #expect(estimator.estimate(Self.query("ja-JP"), in: index(ageDays: 14)).height == 384, "day 14 is outside the last 14 days")
        #expect(estimator.estimate(Self.query("ja-JP"), in: index(ageDays: 25)).height == 384)
        var longer = EstimatorSettings()
        longer.voteHorizonDays = 30
        #expect(HeightEstimator(settings: longer).estimate(Self.query("ja-JP"), in: index(ageDays: 25)).height == 380)
    }

    /// Too few recent votes (under `min_samples`) leave the all-time answer.
    @Test func recentVotesBelowMinSamplesDoNotAnswer() {
        var index = HeightIndex()
        let history = Self.history(language: "ja-JP", old: 380, new: 384, ageDays: 25)
        for batch in history[0] + history[1].prefix(3) { index.apply(batch.delta) }  // 3 networks: 15 votes
        #expect(HeightEstimator().estimate(Self.query("ja-JP"), in: index).height == 380)
        index.apply(history[1][3].delta)  // 20 votes
        #expect(HeightEstimator().estimate(Self.query("ja-JP"), in: index).height == 384)
    }

    /// The index keeps `dayVoteDaysKept` days of data per key, and drops a removed key's days.
    @Test func theIndexKeepsABoundedNumberOfDays() {
        var index = HeightIndex()
        let key = SeriesKey(model: Self.model, osMajor: 26, language: "ja-JP", orientation: .portrait, keyboardType: "default")
        for day in 0..<100 {
            index.apply(Self.batch("d\(day)", at: Self.today + Int64(day) * Self.day, network: "10.3.0.0", height: 380, count: 5).delta)
        }
        let latest = index.latestVoteDay!
        #expect(index.recentVotes(of: key, sinceDay: 0)?.total == Int64(HeightIndex.dayVoteDaysKept) * 5)
        #expect(index.recentVotes(of: key, sinceDay: latest - 13)?.total == 70)
        index.remove([key])
        #expect(index.recentVotes(of: key, sinceDay: 0) == nil && index.dayVoteKeyCount == 0)
    }

    /// Other PostgreSQL nodes take the days' votes from the commit log.
    @Test func theCommitLogCarriesTheDaysVotes() {
        var delta = AggregateDelta()
        for batch in Self.history(language: "ja-JP", old: 380, new: 384, ageDays: 25).joined() { delta.merge(batch.delta) }
        #expect(!delta.dayVotes.isEmpty)
        #expect(DeltaCoding.decode(DeltaCoding.encode(delta)) == delta)
    }
}

@Suite("Ageing votes through the daemon's routes", .ownThreads)
struct VoteAgeRouteTests {
    /// 1,500 ja-JP samples stored 25 days ago (as a daemon then stored them), then 300 at +4 pt
    /// posted to the route today: ingest tags the votes with today, `/v1/height` serves the new
    /// height, and a restart (the index rebuilt from the file) answers the same.
    @Test func aHeightThatMovedWithNoReleaseIsServedByTheRouteAndAfterARestart() async throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = directory.appendingPathComponent("kbtd.sqlite").path
        let then = Int64(Date().timeIntervalSince1970) - 25 * VoteAgeTests.day
        do {
            let store = try SQLiteTelemetryStore(path: database)
            for i in 0..<10 {
                let batch = VoteAgeTests.batch("old-\(i)", at: then + Int64(i), network: "10.1.\(i).0", height: 380, count: 150, cap: 1_000)
                #expect(try store.commit([batch]).stored == [true])
            }
        }
        func answer(_ app: InProcessApp) async throws -> (Double?, Int?) {
            let response = try await app.get("/v1/height?model=\(VoteAgeTests.model)&language=ja-JP&os=26.1")
            let body = try JSONParser.parse(response.body)
            return (body["height"]?.double, body["samples"]?.double.map { Int($0) })
        }
        do {
            let app = try InProcessApp(database: database)
            #expect(try await answer(app).0 == 380, "the old height before the move")
            for _ in 0..<3 {
                let response = try await app.post(gzip(batchBody(model: VoteAgeTests.model, os: "26.1",
                                                                 samples: shows(100, height: 384, language: "ja-JP"))),
                                                  encoding: "gzip")
                #expect(response.status == 202, "\(response.text)")
            }
            let (height, samples) = try await answer(app)
            #expect(height == 384 && samples == 1_800, "\(String(describing: height)) \(String(describing: samples))")
            await app.app.shutdown()
        }
        let again = try await InProcessApp.reopened(database: database)
        let (height, samples) = try await answer(again)
        #expect(height == 384 && samples == 1_800)
    }
}

@Suite("Ageing votes: a tie in the recent votes keeps the served height")
struct VoteAgeTieTests {
    @Test func aRecentTieDoesNotMoveTheAnswer() {
        var index = HeightIndex()
        for i in 0..<3 { index.apply(VoteAgeTests.batch("a\(i)", at: VoteAgeTests.today, network: "10.4.\(i).0", height: 346, count: 10).delta) }
        for i in 3..<6 { index.apply(VoteAgeTests.batch("b\(i)", at: VoteAgeTests.today, network: "10.4.\(i).0", height: 360, count: 10).delta) }
        #expect(HeightEstimator().estimate(VoteAgeTests.query("ja-JP"), in: index).height == 346, "15 recent votes against 15")
        index.apply(VoteAgeTests.batch("c", at: VoteAgeTests.today, network: "10.4.6.0", height: 360, count: 10).delta)
        #expect(HeightEstimator().estimate(VoteAgeTests.query("ja-JP"), in: index).height == 360)
    }
}
