@testable import KBTDCore
import KBTDTestSupport
import Testing

/// Release decisions under a work budget (`ReleaseMoveCache`): a decision's first computation walks
/// every model of its keyboard, so the daemon computes at most `releaseWorkBudget` models per hold
/// of its index lock, and its settler makes the decisions ahead of the questions. An answer read
/// off a finished decision is the answer an unbounded walk gives.
@Suite struct ReleaseDecisionBudgetTests {
    static let models = (1...200).map { "iPhone\(100 + $0),1" }

    /// 200 models with ja-JP at 380 on 26.1 and at `releaseHeight` on 26.2 (by default 386: the
    /// release moved it), each release on three networks of the model's own.
    static func fleet(budget: Int = .max, releaseHeight: Double = 386) -> HeightIndex {
        var index = HeightIndex()
        for (n, model) in models.enumerated() {
            for network in 0..<3 {
                index.apply(ReleaseSourceTests.networkBatch(model: model, os: "26.1", language: "ja-JP", height: 380, count: 10,
                                                            network: 1_000 * n + network))
                index.apply(ReleaseSourceTests.networkBatch(model: model, os: "26.2", language: "ja-JP", height: releaseHeight, count: 10,
                                                            network: 1_000 * n + network))
            }
        }
        index.releaseWorkBudget = budget
        return index
    }

    /// An answer that meets an unfinished decision computes at most the budget of it (per decision
    /// its key asks: 26.1 and 26.2 here) and counts as unfinished; asked again, it picks up where
    /// the last hold stopped, and once nothing is unfinished it answers as the unbounded walk does.
    @Test func anAnswerComputesAtMostTheBudgetPerHoldAndEndsWhereAWalkEnds() throws {
        let index = Self.fleet(budget: 32)
        let estimator = HeightEstimator()
        let query = try ReleaseFleet.query(Self.models[7], "ja-JP", "26.2")
        var holds = 0
        var answer: HeightEstimate
        while true {
            let unfinished = index.releaseMoves.unfinished, computed = index.releaseMoves.differencesComputed
            answer = estimator.estimate(query, in: index)
            holds += 1
            #expect(index.releaseMoves.differencesComputed - computed <= 2 * 32, "hold \(holds)")
            if index.releaseMoves.unfinished == unfinished { break }
            try #require(holds < 100)
        }
        // Two decisions of 200 models each, 32 models per decision and hold.
        #expect(holds == 7)
        #expect(index.releaseMoves.differencesComputed == 400)
        let walked = estimator.estimate(query, in: Self.fleet(budget: .max))
        #expect(answer.height == walked.height)
        #expect(answer.basis == walked.basis)
        #expect(answer.height == 386, "26.2 moved every model: its phones get 26.2's height")
    }

    /// The settler makes every decision within its budget per call, and afterwards no answer
    /// computes a model's difference or meets an unfinished decision.
    @Test func theSettlerMakesEveryDecisionAheadWithinItsBudget() throws {
        let index = Self.fleet(budget: .max)
        let estimator = HeightEstimator()
        var calls = 0
        while true {
            let computed = index.releaseMoves.differencesComputed
            let settled = estimator.settleReleaseDecisions(in: index, budget: 50)
            calls += 1
            #expect(index.releaseMoves.differencesComputed - computed <= 50, "call \(calls)")
            if settled { break }
            try #require(calls < 100)
        }
        #expect(index.releaseMoves.differencesComputed == 400)
        #expect(calls >= 400 / 50)
        let computed = index.releaseMoves.differencesComputed, unfinished = index.releaseMoves.unfinished
        let walked = Self.fleet(budget: .max)
        for model in Self.models {
            for os in ["26", "26.1", "26.2", "26.3"] {
                let query = try ReleaseFleet.query(model, "ja-JP", os)
                #expect(estimator.estimate(query, in: index) == estimator.estimate(query, in: walked), "\(model) on \(os)")
            }
        }
        #expect(index.releaseMoves.differencesComputed == computed, "every decision was already made")
        #expect(index.releaseMoves.unfinished == unfinished)
        #expect(estimator.settleReleaseDecisions(in: index, budget: 50), "nothing left to settle")
        #expect(index.releaseMoves.differencesComputed == computed)
    }

    /// After a walk made every decision, a commit touching one model's keys makes the settler
    /// refresh only the decisions of that model's keyboard and major (that model's difference in
    /// each), not look up every keyboard on every release; a new keyboard makes it walk again.
    @Test func theSettlerRefreshesOnlyWhatACommitMadeStale() throws {
        var index = Self.fleet(budget: .max)
        for (n, model) in Self.models.prefix(20).enumerated() {
            for network in 0..<3 {
                for os in ["26.1", "26.2"] {
                    index.apply(ReleaseSourceTests.networkBatch(model: model, os: os, language: "en-US", height: 300, count: 10,
                                                                network: 1_000 * n + network))
                }
            }
        }
        let estimator = HeightEstimator()
        func settle() throws {
            var calls = 0
            while !estimator.settleReleaseDecisions(in: index, budget: 1_000) {
                calls += 1
                try #require(calls < 100)
            }
        }
        try settle()
        // Two keyboards (ja-JP, en-US) on two supported releases (26.1, 26.2): four decisions.
        #expect(index.releaseMoves.computed == 4)
        #expect(index.releaseMoves.differencesComputed == 2 * 200 + 2 * 20)

        // One model's ja-JP on 26.2: its keyboard's two decisions on major 26 are stale, en-US's are not.
        index.apply(ReleaseSourceTests.networkBatch(model: Self.models[3], os: "26.2", language: "ja-JP", height: 386, count: 5,
                                                    network: 3_000))
        try settle()
        #expect(index.releaseMoves.lookups == 2, "the two stale decisions, not all four")
        #expect(index.releaseMoves.computed == 2)
        #expect(index.releaseMoves.differencesComputed == 2, "one model's difference in each")
        // Nothing changed since: nothing to look up.
        try settle()
        #expect(index.releaseMoves.lookups == 2)

        // A new keyboard brings decisions no walk made: the settler walks every one again.
        index.apply(ReleaseSourceTests.networkBatch(model: Self.models[0], os: "26.1", language: "fr-FR", height: 390, count: 10,
                                                    network: 5_000))
        try settle()
        #expect(index.releaseMoves.lookups == 3 * 2, "three keyboards on two releases")
        #expect(index.releaseMoves.computed == 2, "only fr-FR's decisions are new")
        // What the settler left is what a walk from scratch decides.
        var walked = index
        walked.releaseMoves = ReleaseMoveCache()
        for model in Self.models.prefix(5) {
            for (language, os) in [("ja-JP", "26.2"), ("en-US", "26.2"), ("fr-FR", "26.1")] {
                let query = try ReleaseFleet.query(model, language, os)
                #expect(estimator.estimate(query, in: index) == estimator.estimate(query, in: walked), "\(model) \(language) \(os)")
            }
        }
    }

    /// One network spraying point releases on supported keys adds entries (bounded per key) but
    /// no release decision: a release no key supports moved nothing, so neither the settler nor
    /// an answer for a phone on a sprayed release computes a model's difference for it.
    @Test func aSprayedReleaseCostsNoDecision() throws {
        var index = HeightIndex()
        let models = Array(Self.models.prefix(20))
        for (n, model) in models.enumerated() {
            for network in 0..<3 {
                index.apply(ReleaseSourceTests.networkBatch(model: model, os: "26.1", language: "ja-JP", height: 380, count: 10,
                                                            network: 1_000 * n + network))
            }
        }
        for minor in 2...41 {
            for model in models {
                index.apply(ReleaseSourceTests.networkBatch(model: model, os: "26.\(minor)", language: "ja-JP", height: 390,
                                                            count: 1, network: 99))
            }
        }
        index.setReleaseSupportMinimum(3)
        #expect(index.supportedReleaseHolders == [26: [1: 20]], "26.1 on every key, no sprayed release")
        #expect(index.releaseMinors[26]?.count == HeightIndex.maxReleasesPerKey, "a key keeps at most the bound")
        let estimator = HeightEstimator()
        var calls = 0
        while !estimator.settleReleaseDecisions(in: index, budget: 1_000) {
            calls += 1
            try #require(calls < 10)
        }
        #expect(index.releaseMoves.computed == 1, "one decision: ja-JP on 26.1")
        #expect(index.releaseMoves.differencesComputed == models.count)
        for model in models {
            for minor in [1, 5, 30, 41] { _ = estimator.estimate(try ReleaseFleet.query(model, "ja-JP", "26.\(minor)"), in: index) }
        }
        #expect(index.releaseMoves.differencesComputed == models.count, "answers on sprayed releases decided nothing")
        // Counted again for another min_sources: with 1, one network supports a release.
        index.setReleaseSupportMinimum(1)
        #expect(index.releaseHasSupport(osMajor: 26, minor: 41))
        #expect(index.supportedReleaseHolders[26]?.count == HeightIndex.maxReleasesPerKey)
        index.setReleaseSupportMinimum(3)
        #expect(index.supportedReleaseHolders == [26: [1: 20]])
        // A key that leaves takes its supported release with it.
        index.remove([SeriesKey(model: models[0], osMajor: 26, language: "ja-JP", orientation: .portrait, keyboardType: "default")])
        #expect(index.supportedReleaseHolders == [26: [1: 19]])
    }
}
