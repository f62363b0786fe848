import Foundation
import KBTDCore
import Testing

@Suite("Point releases answer on their own where they moved keyboards")
struct ReleaseTests {
    @Test func aMinorReleaseThatMovedOneLanguageIsServedItsOwnHeight() throws {
        let index = ReleaseFleet.index(shift: 4, newSamples: 300)
        let estimator = HeightEstimator()
        #expect(estimator.releaseMoved(osMajor: 26, minor: 2, language: "ja-JP", orientation: .portrait,
                                       keyboardType: "default", in: index))
        #expect(!estimator.releaseMoved(osMajor: 26, minor: 2, language: "en-US", orientation: .portrait,
                                        keyboardType: "default", in: index))
        for model in ReleaseFleet.models {
            let old = ReleaseFleet.base(model) + ReleaseFleet.candidateBar
            let new = estimator.estimate(try ReleaseFleet.query(model, "ja-JP", "26.2"), in: index)
            #expect(new.height == old + 4 && new.basis == .modelOSLanguage && new.samples == 300, "\(model): \(new)")
            // Phones on the earlier release keep theirs, patch releases included.
            for os in ["26.1", "26.1.2", "26.0"] {
                let earlier = estimator.estimate(try ReleaseFleet.query(model, "ja-JP", os), in: index)
                #expect(earlier.height == old && earlier.basis == .modelOSLanguage && earlier.samples == 1_500, "\(model) \(os): \(earlier)")
            }
            // A later patch of the moving release belongs to it.
            #expect(estimator.estimate(try ReleaseFleet.query(model, "ja-JP", "26.2.1"), in: index).height == old + 4)
            // The language the release did not move answers as before, on both releases.
            for os in ["26.1", "26.2"] {
                let query = try ReleaseFleet.query(model, "en-US", os)
                let english = estimator.estimate(query, in: index)
                #expect(english == HeightEstimator(chain: .beforeReleases).estimate(query, in: index), "\(model) \(os)")
                #expect(english.height == ReleaseFleet.base(model))
            }
            // Without a minor (`os=26`), and on the chain before releases, the major's answer stands:
            // 1,500 old votes outvote 300 new ones.
            let major = try ReleaseFleet.query(model, "ja-JP", "26")
            #expect(HeightEstimator(chain: .beforeReleases).estimate(try ReleaseFleet.query(model, "ja-JP", "26.2"), in: index).height == old)
            #expect(estimator.estimate(HeightQuery(model: model, language: "ja-JP", osMajor: 26), in: index).height == old)
            _ = major
        }
    }

    @Test func theNewReleaseAnswersOnceItHasALevelsSupport() throws {
        let estimator = HeightEstimator()
        let model = ReleaseFleet.models[0]
        let old = ReleaseFleet.base(model) + ReleaseFleet.candidateBar
        // 19 samples per model: under min_samples (20), so the release cannot show it moved; the major answers.
        let thin = ReleaseFleet.index(shift: 4, newSamples: 19)
        #expect(estimator.estimate(try ReleaseFleet.query(model, "ja-JP", "26.2"), in: thin).height == old)
        // 20 samples (min_samples) on each model suffice.
        let enough = ReleaseFleet.index(shift: 4, newSamples: 20)
        let answer = estimator.estimate(try ReleaseFleet.query(model, "ja-JP", "26.2"), in: enough)
        #expect(answer.height == old + 4 && answer.samples == 20, "\(answer)")
    }

    @Test func aReleaseThatMovedNothingAnswersExactlyAsBefore() throws {
        // 26.2 reports the same keyboards, plus on one model a thin, odd key (devices without the bar).
        var index = ReleaseFleet.index(shift: 0, newSamples: 300)
        let odd = ReleaseFleet.models[0]
        index.apply(ReleaseFleet.batch(model: odd, os: "26.2", language: "ja-JP", height: ReleaseFleet.base(odd), count: 400))
        let current = HeightEstimator(), before = HeightEstimator(chain: .beforeReleases)
        for model in ReleaseFleet.models + ["iPhone18,1"] {
            for language in ["ja-JP", "en-US", "fr-FR"] {
                for os in ["26.2", "26.1", "26.0", "26", "18.6"] {
                    let query = try ReleaseFleet.query(model, language, os)
                    #expect(current.estimate(query, in: index) == before.estimate(query, in: index), "\(model) \(language) \(os)")
                }
            }
        }
    }

    @Test func removingAKeyDropsItsReleases() {
        var index = ReleaseFleet.index(shift: 4, newSamples: 300)
        let before = index.releaseCount
        let key = SeriesKey(model: ReleaseFleet.models[0], osMajor: 26, language: "ja-JP", orientation: .portrait, keyboardType: "default")
        #expect(index.releases(of: key).map(\.minor) == [1, 2])
        index.remove([key])
        #expect(index.releases(of: key).isEmpty && index.releaseCount == before - 2)
    }

    /// The release entries and per-day votes live in pooled arrays linked by key slot: removing
    /// most keys (which renumbers the slots) and adding them back (which reuses freed entries)
    /// leaves every key holding exactly what an index built from its deltas alone holds.
    @Test func releasesAndDayVotesFollowTheirKeysThroughRemovalAndCompaction() {
        func delta(_ i: Int, round: Int) -> AggregateDelta {
            var delta = ReleaseFleet.batch(model: "iPhone\(i % 40),1", os: ["26.0", "26.1", "26.2"][(i + round) % 3],
                                           language: "l\(i)", height: 300 + Double((i + round) % 5), count: 20 + i % 7)
            delta.recordDay(receivedAt: Int64(20_000 + (i * 7 + round * 13) % 45) * 86_400)
            return delta
        }
        let count = 3_000
        let kept = (0..<count).filter { $0 % 5 == 0 }
        let dropped = (0..<count).filter { $0 % 5 != 0 }
        let key = { (i: Int) in SeriesKey(model: "iPhone\(i % 40),1", osMajor: 26, language: "l\(i)", orientation: .portrait,
                                           keyboardType: "default") }
        var index = HeightIndex()
        for round in 0..<3 { for i in 0..<count { index.apply(delta(i, round: round)) } }
        index.remove(dropped.map(key))
        for round in 0..<3 { for i in dropped { index.apply(delta(i, round: round)) } }
        // The same content, built in the order it now holds it.
        var reference = HeightIndex()
        for round in 0..<3 { for i in kept { reference.apply(delta(i, round: round)) } }
        for round in 0..<3 { for i in dropped { reference.apply(delta(i, round: round)) } }
        #expect(index.latestVoteDay == reference.latestVoteDay && index.latestVoteDay == 20_044)
        #expect(index.releaseCount == reference.releaseCount && index.dayVoteKeyCount == reference.dayVoteKeyCount)
        var withDays = 0
        for i in 0..<count {
            let key = key(i)
            #expect(index.releases(of: key).map(\.minor) == reference.releases(of: key).map(\.minor), "\(key)")
            #expect(index.releases(of: key).map(\.stats) == reference.releases(of: key).map(\.stats), "\(key)")
            #expect(index.recentVotes(of: key, sinceDay: 0) == reference.recentVotes(of: key, sinceDay: 0), "\(key)")
            if index.recentVotes(of: key, sinceDay: 0) != nil { withDays += 1 }
        }
        #expect(withDays > count / 2, "most keys have days inside the kept month")
        // Removing every key leaves no release entries or days behind.
        index.remove((0..<count).map(key))
        #expect(index.releaseCount == 0 && index.dayVoteKeyCount == 0)
    }

    @Test func theReleaseOfADeviceIsItsMinor() {
        #expect(FieldRules.osMinor("26.2") == 2 && FieldRules.osMinor("26.0.1") == 0 && FieldRules.osMinor("26") == 0)
        #expect(FieldRules.osMinor("26.x") == nil)
    }
}
