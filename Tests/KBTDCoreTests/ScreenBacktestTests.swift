import Foundation
@testable import KBTDCore
import Testing

@Suite("kbtd evaluate --screens: what each reported screen is served")
struct ScreenBacktestTests {
    @Test func zoomedPhonesAreServedTheirOwnHeightAfterAndTheMajoritysBefore() throws {
        let index = ZoomFleet.index()
        let estimator = HeightEstimator()
        let cases = ScreenBacktest.cases(index, estimator: estimator)
        // Every key (5 models x 2 OS majors) on both screens, asked twice.
        #expect(cases.count == 5 * 2 * 2 * 2)
        for item in cases {
            let base = ZoomFleet.base(item.key.model)
            #expect(item.keyMode == base)
            #expect(item.truth == (item.screen == ZoomFleet.zoomed ? base - ZoomFleet.difference : base))
            #expect(item.differs == (item.screen == ZoomFleet.zoomed))
            // The current chain serves each screen its own height, from level 1 with the key visible
            // and from the model's other OS major with the key hidden.
            #expect(item.answer == item.truth, "\(item)")
            #expect(item.basis == (item.asked == .keyVisible ? .modelOSLanguage : .modelLanguage), "\(item)")
        }
        let after = ScreenBacktest.rows(cases)
        #expect(after.map(\.cases) == [10, 10, 10, 10])
        #expect(after.allSatisfy { $0.meanError == 0 && $0.within == 1 })
        #expect(after.filter(\.differs).allSatisfy { $0.medianSamples == 300 })

        // Before screen variants every screen got the majority's height: the zoomed ones 17 pt off.
        let before = ScreenBacktest.rows(ScreenBacktest.cases(index, estimator: HeightEstimator(chain: .beforeScreenVariants)))
        for row in before {
            #expect(row.meanError == (row.differs ? ZoomFleet.difference : 0), "\(row)")
            #expect(row.within == (row.differs ? 0 : 1))
        }
    }

    @Test func aScreenWithoutALevelsSupportIsNoCaseAndTheFilterChoosesKeys() {
        var index = ZoomFleet.index()
        // A third screen with fewer docked samples than min_samples on one model: not a case.
        let model = ZoomFleet.models[0]
        index.apply(ZoomFleet.batch(model: model, os: "26.1", screen: ScreenSize(width: 375, height: 812),
                                    height: ZoomFleet.base(model) - 30, count: 5))
        let cases = ScreenBacktest.cases(index, estimator: HeightEstimator())
        #expect(!cases.contains { $0.screen == ScreenSize(width: 375, height: 812) })
        #expect(cases.count == 40)
        let one = ScreenBacktest.cases(index, estimator: HeightEstimator(), filter: ChainBacktest.Filter(model: model, osMajor: 26))
        #expect(one.count == 4 && one.allSatisfy { $0.key.model == model && $0.key.osMajor == 26 })
    }
}
