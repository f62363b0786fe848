import KBTDCore
import Testing

/// The dashboard's "when did this key's height last change", recomputed
/// from the key's votes per day with the estimator's own ageing rule.
@Suite("Height changes recomputed from the votes per day")
struct HeightChangeTests {
    static let model = "iPhone17,1"
    static let today = 20_400

    /// `count` docked shows at `height` on `day`, one vote each (as from a trusted peer).
    static func delta(_ language: String, height: Double, count: Int, day: Int) -> AggregateDelta {
        var delta = ReleaseFleet.batch(model: model, os: "26.1", language: language, height: height, count: count)
        delta.recordDay(receivedAt: Int64(day) * 86_400 + 3_600)
        return delta
    }

    static func key(_ language: String) -> SeriesKey {
        SeriesKey(model: model, osMajor: 26, language: language, orientation: .portrait, keyboardType: "default")
    }

    @Test func aKeyThatMovedShowsTheDayItsNewHeightWonAndFromWhat() {
        var index = HeightIndex()
        index.apply(Self.delta("ja-JP", height: 380, count: 1_500, day: Self.today - 25))
        index.apply(Self.delta("ja-JP", height: 384, count: 300, day: Self.today - 10))
        index.apply(Self.delta("ja-JP", height: 384, count: 10, day: Self.today))
        index.apply(Self.delta("en-US", height: 336, count: 400, day: Self.today - 20))
        index.apply(Self.delta("en-US", height: 336, count: 40, day: Self.today))
        let estimator = HeightEstimator()
        let changes = estimator.heightChanges(model: Self.model, in: index)
        #expect(changes.map(\.key) == [Self.key("en-US"), Self.key("ja-JP")])
        let moved = changes[1]
        #expect(moved == HeightChange(key: Self.key("ja-JP"), height: 384, changedOnDay: Self.today - 10, from: 380,
                                      firstDay: Self.today - 25, lastDay: Self.today))
        // The height now is what level 1 serves.
        let served = estimator.estimate(HeightQuery(model: Self.model, language: "ja-JP", osMajor: 26), in: index)
        #expect(served.height == moved.height && served.basis == .modelOSLanguage)
        #expect(changes[0] == HeightChange(key: Self.key("en-US"), height: 336, changedOnDay: nil, from: nil,
                                           firstDay: Self.today - 20, lastDay: Self.today))
        // Without ageing the old votes still win: nothing changed.
        var settings = EstimatorSettings()
        settings.voteHorizonDays = 0
        let unaged = HeightEstimator(settings: settings).heightChanges(model: Self.model, in: index)
        #expect(unaged[1].height == 380 && unaged[1].changedOnDay == nil)
        #expect(estimator.heightChanges(model: "iPhone1,1", in: index).isEmpty)
    }

    /// New votes that only outnumber the old ones after a while: the change is the day they did.
    @Test func theChangeIsTheDayTheNewVotesWon() {
        var index = HeightIndex()
        index.apply(Self.delta("ja-JP", height: 380, count: 100, day: Self.today - 5))
        for day in (Self.today - 4)...Self.today { index.apply(Self.delta("ja-JP", height: 384, count: 30, day: day)) }
        // 30 a day at 384 against 100 at 380: 384 first has more votes (120) at the end of day -1.
        let change = HeightEstimator().heightChanges(model: Self.model, in: index).first
        #expect(change?.changedOnDay == Self.today - 1 && change?.from == 380 && change?.height == 384, "\(String(describing: change))")
    }
}
