import Foundation
@testable import KBTDCore
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

@Suite("A point release answers on its own only with min_sources of its own")
struct ReleaseSourceTests {
    /// One network's batch: `count` docked shows on `os` from `network`, its key attributed to
    /// that source as `SourcePolicy.apply` attributes it (votes left uncapped: the sources are the point).
    static func networkBatch(model: String, os: String, language: String, height: Double, count: Int,
                             network: Int) -> AggregateDelta {
        let device = Device(model: model, os: os, osMajor: FieldRules.osMajor(os)!)
        var delta = AggregateDelta()
        for _ in 0..<count {
            delta.add(Sample(t: 0, event: .show, language: language, orientation: .portrait, height: height,
                             safeAreaBottom: 34, duration: 0.25, curve: 7), device: device)
        }
        let source = SourceID(network: "198.51.100.\(network)", key: SourceKey(k0: 3, k1: 5))
        for key in delta.sources.keys { delta.sources[key] = [source] }
        delta.recordRelease(os: os)
        return delta
    }

    /// Trusted 26.1 history on every model (so every key has its sources), then 26.2 moves
    /// ja-JP by 4 pt, reported on each model by `networks(model)` distinct networks, 100
    /// samples each. Each (key, release, network) reaches the index once, as the stores pass it.
    static func index(networks: (String) -> Int) -> HeightIndex {
        var index = HeightIndex()
        for model in ReleaseFleet.models {
            let old = ReleaseFleet.base(model) + ReleaseFleet.candidateBar
            index.apply(ReleaseFleet.batch(model: model, os: "26.1", language: "ja-JP", height: old, count: 1_500))
            for network in 0..<networks(model) {
                index.apply(networkBatch(model: model, os: "26.2", language: "ja-JP", height: old + 4, count: 100,
                                         network: network))
            }
        }
        return index
    }

    @Test func aReleaseReportedByFewerNetworksThanMinSourcesKeepsTheKeysAnswer() throws {
        let estimator = HeightEstimator()  // min_sources 3
        let bogus = ReleaseFleet.models[0]
        // Four models hear the move from 3 networks each; on the first, one network alone reports it.
        let index = Self.index { $0 == bogus ? 1 : 3 }
        let key = SeriesKey(model: bogus, osMajor: 26, language: "ja-JP", orientation: .portrait, keyboardType: "default")
        let release = try #require(index.releases(of: key).first { $0.minor == 2 })
        #expect(release.stats.support == ReleaseSupport(sources: 1, trusted: false) && release.stats.samples == 100)
        // The key itself has a trusted peer, so only the release's own sources hold the answer back.
        #expect(index.series(key).map(estimator.supports) == true)
        #expect(estimator.releaseMoved(osMajor: 26, minor: 2, language: "ja-JP", orientation: .portrait,
                                       keyboardType: "default", in: index))
        for model in ReleaseFleet.models {
            let old = ReleaseFleet.base(model) + ReleaseFleet.candidateBar
            let answer = estimator.estimate(try ReleaseFleet.query(model, "ja-JP", "26.2"), in: index)
            if model == bogus {
                // The key's answer stands (its 1,500 trusted samples), exactly as on the chain before releases.
                #expect(answer == HeightEstimator(chain: .beforeReleases).estimate(try ReleaseFleet.query(model, "ja-JP", "26.2"),
                                                                                   in: index))
                #expect(answer.height == old && answer.samples == 1_600, "\(model): \(answer)")
            } else {
                #expect(answer.height == old + 4 && answer.samples == 300, "\(model): \(answer)")
            }
            #expect(estimator.estimate(try ReleaseFleet.query(model, "ja-JP", "26.1"), in: index).height == old)
        }
    }

    @Test func minSourcesNetworksOrATrustedPeerLetTheReleaseAnswer() throws {
        let model = ReleaseFleet.models[0]
        let old = ReleaseFleet.base(model) + ReleaseFleet.candidateBar
        // Two networks on every model: under min_sources (3), so no release shows it moved.
        let two = Self.index { _ in 2 }
        #expect(!HeightEstimator().releaseMoved(osMajor: 26, minor: 2, language: "ja-JP", orientation: .portrait,
                                                keyboardType: "default", in: two))
        #expect(HeightEstimator().estimate(try ReleaseFleet.query(model, "ja-JP", "26.2"), in: two).height == old)
        // With min_sources 2 the same data is enough.
        var settings = EstimatorSettings()
        settings.minSources = 2
        #expect(HeightEstimator(settings: settings).estimate(try ReleaseFleet.query(model, "ja-JP", "26.2"), in: two).height == old + 4)
        // Three networks (min_sources) are enough.
        let three = Self.index { _ in 3 }
        #expect(HeightEstimator().estimate(try ReleaseFleet.query(model, "ja-JP", "26.2"), in: three).height == old + 4)
        // A trusted peer alone is enough (`ReleaseFleet`'s batches are a trusted peer's).
        let trusted = ReleaseFleet.index(shift: 4, newSamples: 300)
        let key = SeriesKey(model: model, osMajor: 26, language: "ja-JP", orientation: .portrait, keyboardType: "default")
        #expect(trusted.releases(of: key).allSatisfy { $0.stats.support.trusted })
        #expect(HeightEstimator().estimate(try ReleaseFleet.query(model, "ja-JP", "26.2"), in: trusted).height == old + 4)
    }

    /// 26.2 moved ja-JP honestly (3 networks on every model); then one network reports another
    /// height under a fresh 26.9 only, with more votes than 26.2 has. A phone on 26.2 is answered
    /// from 26.2 alone (26.9 comes after it), and a phone on 26.9 from 26.2 (26.9 has one network).
    @Test func aReleaseWithoutItsOwnSupportDoesNotLendToAPooledAnswer() throws {
        let estimator = HeightEstimator()
        let honest = Self.index { _ in 3 }
        var sprayed = honest
        for model in ReleaseFleet.models {
            let old = ReleaseFleet.base(model) + ReleaseFleet.candidateBar
            sprayed.apply(Self.networkBatch(model: model, os: "26.9", language: "ja-JP", height: old + 10, count: 400,
                                            network: 9))
        }
        for model in ReleaseFleet.models {
            let old = ReleaseFleet.base(model) + ReleaseFleet.candidateBar
            for os in ["26.2", "26.9"] {
                let query = try ReleaseFleet.query(model, "ja-JP", os)
                let answer = estimator.estimate(query, in: sprayed)
                #expect(answer == estimator.estimate(query, in: honest), "\(model) \(os): \(answer)")
                #expect(answer.height == old + 4 && answer.samples == 300, "\(model) \(os): \(answer)")
            }
        }
    }

    /// One network sprays 1,000 fresh minors (20 samples each) on every model's key after 26.2
    /// moved honestly: each key keeps at most `maxReleasesPerKey` releases, its supported ones
    /// among them, every answer stays, and the estimator decides each release of a key once per
    /// index generation instead of walking every model for every release of every request.
    @Test func aSprayOfMinorsIsBoundedPerKeyAndDecidedOncePerGeneration() throws {
        let honest = Self.index { _ in 3 }
        var sprayed = honest
        var merged = AggregateDelta()
        for minor in 3..<1_003 {
            for model in ReleaseFleet.models {
                let old = ReleaseFleet.base(model) + ReleaseFleet.candidateBar
                let batch = Self.networkBatch(model: model, os: "26.\(minor)", language: "ja-JP", height: old + 10, count: 20,
                                              network: 9)
                sprayed.apply(batch)
                merged.merge(batch)
            }
        }
        // Bounded: 16 releases per key (of 1,002), the trusted 26.1 and the honest 26.2 among them.
        #expect(sprayed.releaseCount == ReleaseFleet.models.count * HeightIndex.maxReleasesPerKey)
        for model in ReleaseFleet.models {
            let key = SeriesKey(model: model, osMajor: 26, language: "ja-JP", orientation: .portrait, keyboardType: "default")
            let minors = sprayed.releases(of: key).map(\.minor)
            #expect(minors.count == HeightIndex.maxReleasesPerKey && minors.prefix(2) == [1, 2], "\(model): \(minors)")
            #expect(minors.dropFirst(2) == Array(1_003 - HeightIndex.maxReleasesPerKey + 2..<1_003)[...], "the latest sprayed ones")
        }
        // Only the minors some key holds are listed for the OS major (the export's tables follow them).
        #expect(sprayed.releaseMinors[26]?.count == HeightIndex.maxReleasesPerKey)
        // A load (every release of a key in one delta) keeps the same ones as the commits did.
        var loaded = ReleaseSourceTests.index { _ in 3 }
        loaded.apply(merged)
        for model in ReleaseFleet.models {
            let key = SeriesKey(model: model, osMajor: 26, language: "ja-JP", orientation: .portrait, keyboardType: "default")
            #expect(loaded.releases(of: key).map(\.minor) == sprayed.releases(of: key).map(\.minor))
        }

        let estimator = HeightEstimator()
        #expect(sprayed.releaseMoves.computed == 0, "a new generation starts with nothing decided")
        for round in 0..<3 {
            for model in ReleaseFleet.models {
                let old = ReleaseFleet.base(model) + ReleaseFleet.candidateBar
                for os in ["26.1", "26.2", "26.500", "26.1002"] {
                    let query = try ReleaseFleet.query(model, "ja-JP", os)
                    let answer = estimator.estimate(query, in: sprayed)
                    #expect(answer == estimator.estimate(query, in: honest), "\(model) \(os): \(answer)")
                    #expect(answer.height == (os == "26.1" ? old : old + 4), "\(model) \(os)")
                }
            }
            // Every key holds the same 16 minors: 16 decisions in all, made by the first answer, whatever
            // the number of answers or models after it.
            #expect(sprayed.releaseMoves.computed == HeightIndex.maxReleasesPerKey, "round \(round)")
        }
        // A change to the index starts a new generation.
        sprayed.apply(Self.networkBatch(model: ReleaseFleet.models[0], os: "26.2", language: "ja-JP", height: 380, count: 1,
                                        network: 10))
        #expect(sprayed.releaseMoves.computed == 0)
    }

    /// A commit clears only the release decisions it can change: after one touching a ja-JP key,
    /// the answers for every model and language recompute ja-JP's decisions alone; en-US's stay
    /// decided. A commit touching no key with releases keeps every decision.
    @Test func aCommitRecomputesOnlyTheDecisionsOfTheKeyboardItTouched() throws {
        var index = ReleaseFleet.index(shift: 4, newSamples: 300)
        let estimator = HeightEstimator()
        func answerAll() throws {
            for model in ReleaseFleet.models {
                for language in ["ja-JP", "en-US"] {
                    for os in ["26.1", "26.2"] { _ = estimator.estimate(try ReleaseFleet.query(model, language, os), in: index) }
                }
            }
        }
        try answerAll()
        // Each language's keys hold 26.1 and 26.2: two decisions a language.
        #expect(index.releaseMoves.computed == 4)
        index.apply(ReleaseSourceTests.networkBatch(model: ReleaseFleet.models[0], os: "26.2", language: "ja-JP",
                                                    height: 380, count: 1, network: 10))
        try answerAll()
        #expect(index.releaseMoves.computed == 2, "ja-JP's two decisions, not en-US's")
        #expect(index.releaseMoves.differencesComputed == 2, "each brought up to date by the one model the commit touched")
        try answerAll()
        #expect(index.releaseMoves.computed == 2)
        // A key without releases (fr-FR, its release not recorded) changes no decision.
        var french = ReleaseFleet.batch(model: ReleaseFleet.models[0], os: "26.1", language: "fr-FR", height: 330, count: 5)
        french.releases = [:]
        french.releaseSources = [:]
        index.apply(french)
        try answerAll()
        #expect(index.releaseMoves.computed == 0)
    }

    /// A decision brought up to date from the models a commit touched is the decision a walk over
    /// every model makes, and costs those models only, however many share the keyboard: here a
    /// fleet of 200 models, then commits that move the release on model after model.
    @Test func anUpdatedDecisionEqualsAFullWalkAndCostsOnlyTheTouchedModels() throws {
        let models = ReleaseDecisionBudgetTests.models
        var index = ReleaseDecisionBudgetTests.fleet(releaseHeight: 380)
        let estimator = HeightEstimator()
        let language = LanguageKey(language: "ja-JP", orientation: .portrait, keyboardType: "default")
        /// The decision as answers make it: through the index's cache.
        func cached() -> Bool {
            index.releaseMoved(ReleaseMoveKey(language: language, osMajor: 26, minor: 2, minSamples: estimator.settings.minSamples,
                                              minSources: estimator.settings.minSources),
                               models: { Array(index.models(withLanguage: language)) },
                               difference: { model in
                                   estimator.releaseDifference(SeriesKey(model: model, osMajor: 26, language: "ja-JP",
                                                                         orientation: .portrait, keyboardType: "default"),
                                                               minor: 2, in: index)
                               },
                               decide: HeightEstimator.moved)
        }
        /// The decision by a walk over every model, no cache.
        func walked() -> Bool {
            estimator.releaseMoved(osMajor: 26, minor: 2, language: "ja-JP", orientation: .portrait, keyboardType: "default", in: index)
        }
        #expect(!cached())
        #expect(index.releaseMoves.differencesComputed == 200, "the first decision walks every model once")
        for (n, model) in models.enumerated() {
            // Each model's 26.2 outvoted at 386 by three networks of its own.
            for network in 10..<13 {
                index.apply(ReleaseSourceTests.networkBatch(model: model, os: "26.2", language: "ja-JP", height: 386, count: 20,
                                                            network: network))
            }
            let decision = cached()
            #expect(index.releaseMoves.differencesComputed == 1, "only the touched model is recomputed")
            #expect(decision == walked(), "after \(n + 1) models")
            // The lower median of 200 differences is the 100th: it moves once 101 models moved.
            #expect(decision == (n + 1 >= 101), "after \(n + 1) models")
        }
    }

    @Test func releaseSourcesAreRecordedPerBatchAndCountedUpToTheLimit() {
        let model = ReleaseFleet.models[0]
        let batch = Self.networkBatch(model: model, os: "26.2.1", language: "ja-JP", height: 380, count: 3, network: 7)
        let key = SeriesKey(model: model, osMajor: 26, language: "ja-JP", orientation: .portrait, keyboardType: "default")
        let source = SourceID(network: "198.51.100.7", key: SourceKey(k0: 3, k1: 5))
        #expect(batch.releaseSources == [ReleaseKey(series: key, minor: 2): [source]])
        // Merging keeps each release's sources apart; filtering keeps them with their key.
        var merged = batch
        merged.merge(Self.networkBatch(model: model, os: "26.1", language: "ja-JP", height: 380, count: 3, network: 8))
        #expect(merged.releaseSources.count == 2 && merged.releaseSources[ReleaseKey(series: key, minor: 2)] == [source])
        #expect(merged.filter { $0.model != model }.releaseSources.isEmpty)

        var support = ReleaseSupport()
        #expect(!support.satisfies(1))
        support.add(Set((1...5).map { SourceID(UInt64($0)) }))
        #expect(support.sources == 5 && support.satisfies(5) && !support.satisfies(6))
        support.add(Set((6...20).map { SourceID(UInt64($0)) }))
        #expect(support.sources == 8 && !support.trusted, "at most 8 kept, as key_sources per key")
        support.add([.trusted])
        #expect(support.trusted && support.satisfies(8))
        #expect(ReleaseSupport.union([ReleaseSupport(sources: 2, trusted: false), ReleaseSupport(sources: 1, trusted: true)])
                == ReleaseSupport(sources: 2, trusted: true))
    }

    @Test func theSupportAddsNoMemoryToAReleaseEntry() {
        #expect(MemoryLayout<ReleaseEntry>.stride == 40)
        #expect(MemoryLayout<ReleaseSupport>.size == 2)
    }
}
