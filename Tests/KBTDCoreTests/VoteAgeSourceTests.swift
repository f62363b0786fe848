import Foundation
@testable import KBTDCore
import Testing

@Suite("Ageing votes answer only with min_sources networks inside the window")
struct VoteAgeSourceTests {
    static let day: Int64 = 86_400
    /// The latest day of data: the window counts back from it, not from a clock.
    static let today: Int64 = 20_000 * day + 3_600
    static let key = SeriesKey(model: "iPhone17,1", osMajor: 26, language: "ja-JP", orientation: .portrait,
                               keyboardType: "default")

    /// One network's batch of `count` docked shows at `height`, received `ageDays` days before
    /// `today`, weighed as ingest weighs it (at most `cap` votes per key, bin and day).
    static func batch(network: String, ageDays: Int64, height: Double, count: Int, cap: Int64 = 5) -> AggregateDelta {
        let receivedAt = today - ageDays * day
        var delta = AggregateDelta()
        let device = Device(model: key.model, os: "26.1", osMajor: 26)
        for _ in 0..<count {
            delta.add(Sample(t: 0, event: .show, language: key.language, orientation: .portrait, height: height,
                             safeAreaBottom: 34, duration: 0.25, curve: 7), device: device)
        }
        var policy = SourcePolicy(maxVotesPerSource: cap)
        _ = policy.apply(to: &delta, source: SourceID(network: network), now: Double(receivedAt))
        delta.recordRelease(os: "26.1")
        delta.recordDay(receivedAt: receivedAt)
        return delta
    }

    /// Five networks backed 380 four weeks ago (100 samples each, every one weighing); then
    /// `networks` networks report 384 on each of the last four days, 5 votes each a day.
    static func index(recentNetworks networks: Int) -> HeightIndex {
        var index = HeightIndex()
        for n in 0..<5 {
            index.apply(batch(network: "10.1.\(n).0", ageDays: 28, height: 380, count: 100, cap: 1_000))
        }
        for age in (0..<4).reversed() {
            for n in 0..<networks {
                index.apply(batch(network: "10.2.\(n).0", ageDays: Int64(age), height: 384, count: 30))
            }
        }
        return index
    }

    static let query = HeightQuery(model: key.model, language: key.language, osMajor: 26, osMinor: 1)

    @Test func oneNetworkOnFourRecentDaysDoesNotMoveAServedHeight() {
        let index = Self.index(recentNetworks: 1)
        let since = index.latestVoteDay! - EstimatorSettings().voteHorizonDays + 1
        // 20 recent votes (min_samples), all for 384, from one network.
        #expect(index.recentVotes(of: Self.key, sinceDay: since)?.total == 20)
        #expect(index.recentSupport(of: Self.key, sinceDay: since) == ReleaseSupport(sources: 1, trusted: false))
        #expect(index.recentSupport(of: Self.key, sinceDay: 0) == ReleaseSupport(sources: 6, trusted: false))
        let answer = HeightEstimator().estimate(Self.query, in: index)
        #expect(answer.height == 380 && answer.basis == .modelOSLanguage, "\(answer)")
    }

    @Test func minSourcesNetworksInsideTheWindowMoveIt() {
        #expect(HeightEstimator().estimate(Self.query, in: Self.index(recentNetworks: 2)).height == 380)
        let three = Self.index(recentNetworks: 3)
        let since = three.latestVoteDay! - EstimatorSettings().voteHorizonDays + 1
        #expect(three.recentSupport(of: Self.key, sinceDay: since) == ReleaseSupport(sources: 3, trusted: false))
        let answer = HeightEstimator().estimate(Self.query, in: three)
        #expect(answer.height == 384 && answer.samples == 500 + 360, "\(answer)")
        // With min_sources 1, one network's window answers (the rule is min_sources, not a constant).
        var settings = EstimatorSettings()
        settings.minSources = 1
        #expect(HeightEstimator(settings: settings).estimate(Self.query, in: Self.index(recentNetworks: 1)).height == 384)
    }

    /// A key keeps its latest voters (at most 8): a window's count of networks is exact up to 8,
    /// however many networks voted before it; the same (day, network) given twice counts once.
    @Test func theIndexKeepsEachKeysLatestVotersAndCountsThemPerWindow() {
        var index = HeightIndex()
        for n in 0..<12 { index.apply(Self.batch(network: "10.3.\(n).0", ageDays: 20, height: 380, count: 5)) }
        for n in 0..<2 { index.apply(Self.batch(network: "10.4.\(n).0", ageDays: 1, height: 380, count: 5)) }
        index.apply(Self.batch(network: "10.4.0.0", ageDays: 0, height: 380, count: 5))
        index.apply(Self.batch(network: "10.4.0.0", ageDays: 0, height: 380, count: 5))
        let latest = index.latestVoteDay!
        #expect(index.recentSupport(of: Self.key, sinceDay: latest) == ReleaseSupport(sources: 1, trusted: false))
        #expect(index.recentSupport(of: Self.key, sinceDay: latest - 1) == ReleaseSupport(sources: 2, trusted: false))
        #expect(index.recentSupport(of: Self.key, sinceDay: latest - 20) == ReleaseSupport(sources: 8, trusted: false))
        // A trusted peer's batch satisfies min_sources alone, as everywhere.
        var trusted = AggregateDelta()
        trusted.add(Sample(t: 0, event: .show, language: Self.key.language, orientation: .portrait, height: 384,
                           safeAreaBottom: 34, duration: 0.25, curve: 7), device: Device(model: Self.key.model, os: "26.1", osMajor: 26))
        for series in trusted.sources.keys { trusted.sources[series] = [.trusted] }
        trusted.recordDay(receivedAt: Self.today)
        index.apply(trusted)
        #expect(index.recentSupport(of: Self.key, sinceDay: latest).trusted)
        // Removing the key frees its voters.
        index.remove([Self.key])
        #expect(index.recentSupport(of: Self.key, sinceDay: 0) == ReleaseSupport())
        #expect(index.daySourcePool.count <= 8 && index.freeDaySource != HeightIndex.noEntry)
    }
}
