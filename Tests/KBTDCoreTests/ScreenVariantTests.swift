import Foundation
@testable import KBTDCore
import Testing

/// Display Zoom: a model's zoomed phones render a smaller screen and have a keyboard of their own.
@Suite("Screen variants answer a zoomed phone its own height and leave every other answer as it was")
struct ScreenVariantTests {
    static let standard = ScreenSize(width: 390, height: 844)
    static let zoomed = ScreenSize(width: 320, height: 693)
    static let models = ["iPhone14,5", "iPhone14,7", "iPhone13,2"]

    /// One device's batch from its own network: `count` docked shows at `height` on `screen`.
    static func batch(model: String, os: String = "26.1", language: String = "en-US", screen: ScreenSize?,
                      height: Double, count: Int = 5, network: String) -> AggregateDelta {
        var delta = AggregateDelta()
        let device = Device(model: model, os: os, osMajor: FieldRules.osMajor(os)!, screen: screen)
        for _ in 0..<count {
            delta.add(Sample(t: 0, event: .show, language: language, orientation: .portrait, height: height,
                             safeAreaBottom: 34, duration: 0.25, curve: 7), device: device)
        }
        if let screen { delta.screens[ModelScreenKey(model: model, screen: screen), default: 0] += 1 }
        var policy = SourcePolicy(maxVotesPerSource: 5)
        _ = policy.apply(to: &delta, source: SourceID(network: network), now: 1_800_000_000)
        delta.recordRelease(os: os)
        delta.recordScreen(screen)
        return delta
    }

    /// 30 standard devices at `standardHeight` and `zoomedDevices` zoomed ones at `zoomedHeight` per model.
    static func fleet(zoomedDevices: Int = 6, standardHeight: Double = 336, zoomedHeight: Double = 319,
                      os: String = "26.1") -> HeightIndex {
        var index = HeightIndex()
        for (m, model) in models.enumerated() {
            for d in 0..<30 {
                index.apply(batch(model: model, os: os, screen: standard, height: standardHeight + Double(m),
                                  network: "10.\(m).\(d).0"))
            }
            for d in 0..<zoomedDevices {
                index.apply(batch(model: model, os: os, screen: zoomed, height: zoomedHeight + Double(m),
                                  network: "10.\(m).\(100 + d).0"))
            }
        }
        return index
    }

    static func ask(_ model: String, screen: ScreenSize?, os: Int? = 26, language: String = "en-US",
                    chain: FallbackChain = .current, in index: HeightIndex) -> HeightEstimate {
        HeightEstimator(chain: chain).estimate(HeightQuery(model: model, language: language, osMajor: os, osMinor: 1, screen: screen),
                                               in: index)
    }

    @Test func aZoomedMinorityOfEachModelIsServedItsOwnHeight() {
        let index = Self.fleet()
        for (m, model) in Self.models.enumerated() {
            let zoomed = Self.ask(model, screen: Self.zoomed, in: index)
            #expect(zoomed.height == 319 + Double(m) && zoomed.basis == .modelOSLanguage, "\(model): \(zoomed)")
            #expect(zoomed.samples == 30)
            // Without the variant, the zoomed phone got the majority's height.
            #expect(Self.ask(model, screen: Self.zoomed, chain: .beforeScreenVariants, in: index).height == 336 + Double(m))
            // The standard screen and a question without screen= are answered as before.
            for screen in [Self.standard, nil] {
                let before = Self.ask(model, screen: screen, chain: .beforeScreenVariants, in: index)
                #expect(Self.ask(model, screen: screen, in: index) == before)
                #expect(before.height == 336 + Double(m))
            }
        }
    }

    @Test func levelTwoAnswersTheVariantOnAnOSMajorWithNoKey() {
        let index = Self.fleet()
        let answer = Self.ask("iPhone14,5", screen: Self.zoomed, os: 27, in: index)
        #expect(answer.height == 319 && answer.basis == .modelLanguage, "\(answer)")
        #expect(Self.ask("iPhone14,5", screen: Self.standard, os: 27, in: index).height == 336)
    }

    @Test func aKeyTooThinOnTheScreenIsShiftedByTheModelsDifference() {
        var index = Self.fleet()
        // iOS 27 moved the keyboard 4 points; only two zoomed phones there (too few to tell alone).
        for d in 0..<30 { index.apply(Self.batch(model: "iPhone14,5", os: "27.0", screen: Self.standard, height: 340, network: "10.50.\(d).0")) }
        for d in 0..<2 { index.apply(Self.batch(model: "iPhone14,5", os: "27.0", screen: Self.zoomed, height: 323, network: "10.51.\(d).0")) }
        let answer = Self.ask("iPhone14,5", screen: Self.zoomed, os: 27, in: index)
        // 340 on iOS 27 less the model's zoom difference on English over every OS major (336 - 319 = 17 on most data).
        #expect(answer.basis == .modelOSLanguage)
        #expect(answer.height == 340 - 17, "\(answer)")
        #expect(Self.ask("iPhone14,5", screen: Self.standard, os: 27, in: index).height == 340)
    }

    @Test func aNewModelAskedWithAZoomedScreenIsAnsweredFromTheOtherModelsZoomedPhones() {
        let index = Self.fleet()
        // Every model lists 320x693 (its zoomed phones are a sixth of its batches): their zoomed data answers.
        #expect(index.models(withScreen: Self.zoomed) == Set(Self.models))
        let answer = Self.ask("iPhone99,1", screen: Self.zoomed, in: index)
        #expect(answer.basis == .screenLanguage)
        // The three models' zoomed keyboards (319, 320 and 321, equally many votes): one of them.
        #expect([319, 320, 321].contains(answer.height), "\(answer)")
        let before = Self.ask("iPhone99,1", screen: Self.zoomed, chain: .beforeScreenVariants, in: index)
        #expect(before.height >= 336, "\(before)")
        // The standard screen is answered as before.
        #expect(Self.ask("iPhone99,1", screen: Self.standard, in: index)
            == Self.ask("iPhone99,1", screen: Self.standard, chain: .beforeScreenVariants, in: index))
    }

    @Test func aModelWhoseScreensShareOneKeyboardAnswersExactlyAsBefore() {
        let index = Self.fleet(zoomedHeight: 336)
        for model in Self.models {
            for screen in [Self.zoomed, Self.standard, nil] {
                for os in [26, 27, nil] {
                    #expect(Self.ask(model, screen: screen, os: os, in: index)
                        == Self.ask(model, screen: screen, os: os, chain: .beforeScreenVariants, in: index))
                }
            }
        }
    }

    @Test func oneNetworkSprayingScreensCannotGrowAKeyOrMoveAnAnswer() {
        var index = Self.fleet(zoomedDevices: 0)
        let key = SeriesKey(model: "iPhone14,5", osMajor: 26, language: "en-US", orientation: .portrait, keyboardType: "default")
        for w in 0..<10 {
            index.apply(Self.batch(model: "iPhone14,5", screen: ScreenSize(width: 300 + w, height: 600), height: 250,
                                   count: 2, network: "192.0.2.0"))
        }
        // One screen with a level's samples, all from that network.
        index.apply(Self.batch(model: "iPhone14,5", screen: ScreenSize(width: 299, height: 600), height: 250,
                               count: 30, network: "192.0.2.0"))
        // The genuine screen stays; the key holds at most four.
        let held = index.screens(of: key)
        #expect(held.count == HeightIndex.maxScreensPerKey)
        #expect(held.contains { $0.screen == Self.standard })
        #expect(index.screenVariantCount == HeightIndex.maxScreensPerKey + Self.models.count - 1)
        let sprayed = Self.ask("iPhone14,5", screen: ScreenSize(width: 299, height: 600), in: index)
        #expect(sprayed.height == 336, "\(sprayed)")
        // Two networks of zoomed phones are not enough either (min_sources = 3).
        // (The index counts every source it is given as new: the stores give it each (key, screen, source) once.)
        var two = Self.fleet(zoomedDevices: 0)
        for n in 0..<2 {
            two.apply(Self.batch(model: "iPhone14,5", screen: Self.zoomed, height: 319, count: 25, network: "10.0.10\(n).0"))
        }
        #expect(two.screens(of: key).first { $0.screen == Self.zoomed }?.stats.samples == 50)
        #expect(Self.ask("iPhone14,5", screen: Self.zoomed, in: two).height == 336)
    }

    @Test func removingAKeyFreesItsScreensForTheNext() {
        var index = Self.fleet()
        let before = index.screenVariantCount
        #expect(before == Self.models.count * 2)
        let key = SeriesKey(model: "iPhone14,5", osMajor: 26, language: "en-US", orientation: .portrait, keyboardType: "default")
        index.remove([key])
        #expect(index.screens(of: key).isEmpty)
        #expect(index.screenVariantCount == before - 2)
        let pool = index.screenPool.count
        var both = Self.batch(model: "iPhone14,5", screen: Self.zoomed, height: 319, network: "10.9.9.0")
        both.merge(Self.batch(model: "iPhone14,5", screen: Self.standard, height: 336, network: "10.9.8.0"))
        index.apply(both)
        #expect(index.screens(of: key).map(\.screen) == [Self.zoomed, Self.standard])
        #expect(index.screenPool.count == pool, "the freed entries are reused")
    }

    @Test func aKeyOfOneScreenHoldsNoEntryAndASecondScreenSplitsItExactly() {
        var index = HeightIndex()
        for d in 0..<30 { index.apply(Self.batch(model: "iPhone14,5", screen: Self.standard, height: 336, network: "10.0.\(d).0")) }
        let key = SeriesKey(model: "iPhone14,5", osMajor: 26, language: "en-US", orientation: .portrait, keyboardType: "default")
        #expect(index.screenEntryCount == 0 && index.screenVariantCount == 1)
        #expect(index.screens(of: key).first?.stats.samples == 150)
        var all = AggregateDelta()
        for d in 0..<30 { all.merge(Self.batch(model: "iPhone14,5", screen: Self.standard, height: 336, network: "10.0.\(d).0")) }
        for d in 0..<6 {
            let zoomed = Self.batch(model: "iPhone14,5", screen: Self.zoomed, height: 319, network: "10.0.\(100 + d).0")
            index.apply(zoomed)
            all.merge(zoomed)
        }
        #expect(index.screenEntryCount == 2)
        // What a restart loads from the rows: the same screens, with the same stats.
        var loaded = HeightIndex()
        loaded.apply(all)
        #expect(index.screens(of: key).map(\.screen) == loaded.screens(of: key).map(\.screen))
        #expect(index.screens(of: key).map(\.stats) == loaded.screens(of: key).map(\.stats))
    }

    @Test func theScreensToDropAreTheWeakestWhateverTheirOrder() {
        let strong = ReleaseSupport(sources: 5, trusted: false)
        let weak = ReleaseSupport(sources: 1, trusted: false)
        var held = (0..<6).map { ScreenStanding(screen: ScreenSize(width: 300 + $0, height: 600), support: weak, samples: Int64(10 + $0)) }
        held.append(ScreenStanding(screen: Self.zoomed, support: strong, samples: 1))
        let dropped = HeightIndex.screensToDrop(held)
        #expect(dropped == [ScreenSize(width: 300, height: 600), ScreenSize(width: 301, height: 600), ScreenSize(width: 302, height: 600)])
        #expect(HeightIndex.screensToDrop(held.reversed()) == dropped)
        #expect(HeightIndex.screensToDrop(Array(held.prefix(4))).isEmpty)
    }
}
