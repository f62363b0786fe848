@testable import KBTDCore
import KBTDTestSupport
import Testing

@Suite("Replay: how long kbtd takes to serve a key's new height")
struct ReplayTests {
    static let day: Int64 = 86_400
    /// The first day of the fleets below (a Monday in November 2026).
    static let start: Int64 = 20_776 * day

    /// One phone's batch of `count` docked shows, received at `time`.
    static func batch(_ model: String, os: String, language: String, height: Double, count: Int, at time: Int64) -> AggregateDelta {
        var delta = ReleaseFleet.batch(model: model, os: os, language: language, height: height, count: count)
        delta.recordDay(receivedAt: time)
        return delta
    }

    /// A point release's fleet as it happens: a day of 26.1 history (1,500 ja-JP and en-US samples per model,
    /// in batches of 50), then phones on 26.2, whose ja-JP keyboard is `shift` points taller, send
    /// batches of 10, the five models in turn, alongside 26.1 phones that keep sending theirs.
    static func releaseFleet(shift: Double, newBatches: Int = 40) -> [ReplayStep] {
        var steps: [ReplayStep] = []
        var time = start
        for _ in 0..<30 {
            for model in ReleaseFleet.models {
                time += 1
                var delta = batch(model, os: "26.1", language: "ja-JP", height: ReleaseFleet.base(model) + ReleaseFleet.candidateBar,
                                  count: 50, at: time)
                delta.merge(batch(model, os: "26.1", language: "en-US", height: ReleaseFleet.base(model), count: 50, at: time))
                steps.append(ReplayStep(time: time, delta: delta))
            }
        }
        time += day
        for _ in 0..<newBatches {
            for model in ReleaseFleet.models {
                let old = ReleaseFleet.base(model) + ReleaseFleet.candidateBar
                time += 60
                steps.append(ReplayStep(time: time, delta: batch(model, os: "26.2", language: "ja-JP", height: old + shift, count: 10, at: time)))
                time += 60
                steps.append(ReplayStep(time: time, delta: batch(model, os: "26.1", language: "ja-JP", height: old, count: 10, at: time)))
                time += 60
                steps.append(ReplayStep(time: time, delta: batch(model, os: "26.2", language: "en-US", height: ReleaseFleet.base(model),
                                                                 count: 10, at: time)))
            }
        }
        return steps
    }

    @Test func aReleaseShiftIsServedWithinALevelsSupportOfTheNewRelease() {
        let result = Replay.run(ReplayTimeline(steps: Self.releaseFleet(shift: 4)), estimator: HeightEstimator())
        // One change per model: ja-JP on 26.2. en-US on 26.2 and everything on 26.1 stayed put.
        #expect(result.changes.count == 5, "\(result.changes)")
        for change in result.changes {
            #expect(change.cell.series.language == "ja-JP" && change.cell.minor == 2 && change.releaseWide)
            #expect(change.to - change.from == 8)  // 4 pt, in half points
            // Found once three models have min_samples (20) there: the first two models wait for
            // the third's second batch, the rest are served at their second batch.
            #expect(change.basis == .modelOSLanguage && change.found != nil, "\(change)")
            #expect(change.samples <= 30, "\(change)")
            #expect(change.meanError > 0 && change.meanError <= 4)
        }
        let rows = Replay.changeRows(result.changes)
        #expect(rows.map(\.basis) == [.modelOSLanguage])
        #expect(rows[0].maxSamples <= 30)

        // The chain before releases never finds it: 1,500 old votes outvote every new one here.
        let before = Replay.run(ReplayTimeline(steps: Self.releaseFleet(shift: 4)), estimator: HeightEstimator(chain: .beforeReleases))
        #expect(before.changes.count == 5 && before.changes.allSatisfy { $0.found == nil && $0.basis == nil })
        #expect(Replay.changeRows(before.changes).map(\.basis) == [nil])
        #expect(before.changes.allSatisfy { $0.samples == 400 && $0.meanError == 4 })
    }

    @Test func aReleaseThatMovedNothingReportsNoChangeAndServesEveryPhoneItsHeight() {
        let result = Replay.run(ReplayTimeline(steps: Self.releaseFleet(shift: 0)), estimator: HeightEstimator())
        #expect(result.changes.isEmpty)
        // Once every key has its support, every phone is served its own height.
        let served = result.served.first { $0.basis == .modelOSLanguage }
        #expect(served != nil && served!.meanError == 0 && served!.withinShare == 1)
        #expect(result.scoredSamples == result.samples)
    }

    /// One model, one release: 100 samples a day at `old` for ten days, then 30 a day at `old + 6`
    /// (a server-side keyboard change: no release shows it).
    static func ageingFleet(days: Int) -> [ReplayStep] {
        let model = ReleaseFleet.models[0]
        let old = ReleaseFleet.base(model)
        return (0..<days).map { day in
            let time = start + Int64(day) * Self.day + 3_600
            let delta = day < 10 ? batch(model, os: "26.1", language: "en-US", height: old, count: 100, at: time)
                : batch(model, os: "26.1", language: "en-US", height: old + 6, count: 30, at: time)
            return ReplayStep(time: time, delta: delta)
        }
    }

    @Test func aShiftWithNoReleaseIsServedWithinTheVoteHorizon() {
        var settings = EstimatorSettings()
        settings.voteHorizonDays = 14
        let result = Replay.run(ReplayTimeline(steps: Self.ageingFleet(days: 30)), estimator: HeightEstimator(settings: settings))
        #expect(result.changes.count == 1, "\(result.changes)")
        let change = result.changes[0]
        #expect(change.from == HeightBin.halfPoints(ReleaseFleet.base(ReleaseFleet.models[0])) && change.to == change.from + 12)
        #expect(change.basis == .modelOSLanguage && !change.releaseWide)
        // The new height's 30 a day outvote the old 100 a day once fewer than 4 old days are left in the
        // last 14: day 20, eleven days and 330 samples after the change; within the horizon.
        let found = change.found ?? .max
        #expect(found - change.start <= 14 * Self.day && found - change.start == 10 * Self.day, "\(change)")
        // Phones ask before their samples count: those of day 20 were still served the old height.
        #expect(change.samples == 330 && change.wrongSamples == 330 && change.meanError == 6)

        // Ageing off: 1,000 old votes outvote 600 new ones to the end.
        settings.voteHorizonDays = 0
        let off = Replay.run(ReplayTimeline(steps: Self.ageingFleet(days: 30)), estimator: HeightEstimator(settings: settings))
        #expect(off.changes.count == 1 && off.changes[0].found == nil && off.changes[0].samples == 600)
    }

    @Test func aStoresCountsReplayInTheOrderOfItsBatchReceipts() {
        // What a store keeps of the release fleet: all counts merged, and each batch's receipt.
        let steps = Self.releaseFleet(shift: 4)
        var counts = AggregateDelta()
        var receipts: [ReplayTimeline.Receipt] = []
        for step in steps {
            counts.merge(step.delta)
            // A batch per model and release (the fleet's 26.1 history steps are one phone's ja-JP and en-US).
            var accepted: [String: Int64] = [:]
            for (cell, touch) in step.touches { accepted["\(cell.series.model)|26.\(cell.minor)", default: 0] += touch.samples }
            for (name, samples) in accepted.sorted(by: { $0.key < $1.key }) {
                let parts = name.split(separator: "|").map(String.init)
                receipts.append(ReplayTimeline.Receipt(receivedAt: step.time, model: parts[0], os: parts[1], accepted: Int(samples)))
            }
        }
        let timeline = ReplayTimeline(counts: counts, receipts: receipts, minSamples: 20)
        #expect(timeline.resolution == .batches)
        #expect(timeline.steps.map(\.time) == timeline.steps.map(\.time).sorted())
        // Every docked sample is in a step, none left in the history.
        let replayed = timeline.steps.reduce(Int64(0)) { $0 + $1.touches.values.reduce(0) { $0 + $1.samples } }
        #expect(replayed == counts.heights.values.reduce(0, +))
        #expect(timeline.history.heights.isEmpty)

        let result = Replay.run(timeline, estimator: HeightEstimator())
        #expect(result.changes.count == 5 && result.changes.allSatisfy { $0.basis == .modelOSLanguage }, "\(result.changes)")
        #expect(result.changes.allSatisfy { $0.cell.series.language == "ja-JP" && $0.cell.minor == 2 && $0.samples <= 40 })

        // Without receipts (a PostgreSQL store), the same counts replay by UTC day: everything
        // of a day arrives at once, so no time passes, but the steps still stand in day order.
        let byDay = ReplayTimeline(counts: counts, receipts: [], minSamples: 20)
        #expect(byDay.resolution == .days && byDay.steps.count == 2)
    }

    @Test func apportionSplitsInProportionAndKeepsTheTotal() {
        #expect(ReplayTimeline.apportion(10, by: [1, 1, 1]) == [3, 4, 3])
        #expect(ReplayTimeline.apportion(7, by: [0, 5, 0]) == [0, 7, 0])
        #expect(ReplayTimeline.apportion(0, by: [2, 3]) == [0, 0])
        #expect(ReplayTimeline.apportion(5, by: [0, 0]) == [0, 0])
    }
}
