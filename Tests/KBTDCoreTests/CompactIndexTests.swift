@testable import KBTDCore
import Testing

/// A randomized fleet's deltas, shaped to reach every corner of the compact
/// index: models with one OS major and with several, a model with one
/// language, both orientations, rare and long keyboard types, histograms with
/// one bin, a few, and more than the index keeps, many sources and animations,
/// hide-only keys, and screens.
struct RandomFleet {
    var random: SplitMix64
    let models: [String]
    let languages = ["en-US", "ja-JP", "zh-Hans-CN", "fr-FR", "de-DE", "ko-KR", "pt-BR", "a-language-tag-longer-than-fifteen"]
    let keyboardTypes = ["default", "default", "default", "default", "numberPad", "emailAddress", "asciiCapableNumberPad"]
    let screens = [ScreenSize(width: 393, height: 852), ScreenSize(width: 402, height: 874), ScreenSize(width: 375, height: 667)]

    init(seed: UInt64, models: Int) {
        random = SplitMix64(seed: seed)
        self.models = (0..<models).map { $0 % 7 == 0 ? "AVeryLongModelNameForInterning\($0),1" : "iPhone\(10 + $0),\($0 % 3 + 1)" }
    }

    mutating func pick<T>(_ values: [T]) -> T { values[Int(random.next() % UInt64(values.count))] }
    mutating func int(_ range: ClosedRange<Int>) -> Int { range.lowerBound + Int(random.next() % UInt64(range.count)) }

    /// The OS majors a model reports: one for most, several for some.
    func osMajors(of model: String) -> [Int] {
        switch Fingerprint.of(model) % 4 {
        case 0: [17, 18, 26]
        case 1: [26, 18]
        default: [Int(Fingerprint.of(model) % 3) + 17]
        }
    }

    /// The languages a model reports: one for some, several for most.
    func languageCount(of model: String) -> Int { Fingerprint.of(model) % 5 == 0 ? 1 : languages.count }

    mutating func delta() -> AggregateDelta {
        var delta = AggregateDelta()
        for _ in 0..<int(1...6) {
            let model = pick(models)
            let series = SeriesKey(model: model, osMajor: pick(osMajors(of: model)),
                                   language: languages[int(0...(languageCount(of: model) - 1))],
                                   orientation: random.chance(0.8) ? .portrait : .landscape,
                                   keyboardType: pick(keyboardTypes))
            let base = 2 * (250 + int(0...60)) + (series.osMajor == 26 ? 8 : 0)
            // Mostly one bin, sometimes a few, sometimes a spray past the index's 8 kept bins.
            let binCount = random.chance(0.7) ? 1 : random.chance(0.7) ? int(2...4) : int(9...14)
            if random.chance(0.9) {
                for spread in 0..<binCount {
                    let bin = base + spread * 3
                    let count = Int64(int(1...30))
                    delta.heights[HeightCountKey(series: series, placement: .docked, halfPoints: bin), default: 0] += count
                    delta.votes[SeriesBin(series: series, halfPoints: bin), default: 0] += min(count, Int64(int(1...8)))
                }
                delta.safeAreas[SeriesBin(series: series, halfPoints: random.chance(0.8) ? 68 : int(0...90)), default: 0] += Int64(int(1...9))
                var sources: Set<SourceID> = random.chance(0.3) ? [.trusted] : []
                for _ in 0..<(random.chance(0.6) ? 1 : int(2...12)) { sources.insert(SourceID(UInt64(int(1...40)))) }
                delta.sources[series] = sources
            }
            if random.chance(0.2) {
                delta.heights[HeightCountKey(series: series, placement: .floating, halfPoints: base - 100), default: 0] += 3
            }
            for _ in 0..<(random.chance(0.8) ? 1 : int(2...11)) {
                let bin = AnimationBin(durationMs: random.chance(0.8) ? 250 : int(100...600), curve: random.chance(0.9) ? 7 : int(0...7))
                delta.animations[AnimationCountKey(series: series, event: random.chance(0.85) ? .show : .hide, bin: bin),
                                 default: 0] += Int64(int(1...20))
            }
            if random.chance(0.3) {
                let screen = Fingerprint.of(model) % 11 == 0 ? pick(screens) : screens[Int(Fingerprint.of(model) % 3)]
                delta.screens[ModelScreenKey(model: model, screen: screen), default: 0] += Int64(int(1...5))
            }
        }
        return delta
    }
}

@Suite("Compact height index against the reference index")
struct CompactIndexTests {
    /// Builds the reference (kbtd 0.1's dictionaries) and the compact index from the same deltas.
    func build(seed: UInt64, models: Int, deltas: Int) -> (ReferenceHeightIndex, HeightIndex, RandomFleet) {
        var fleet = RandomFleet(seed: seed, models: models)
        var reference = ReferenceHeightIndex()
        var compact = HeightIndex()
        for _ in 0..<deltas {
            let delta = fleet.delta()
            reference.apply(delta)
            compact.apply(delta)
        }
        return (reference, compact, fleet)
    }

    /// The reference's stats converted part for part, and the parts compared directly too.
    func same(_ reference: ReferenceLevelStats?, _ compact: LevelStats?) -> Bool {
        guard let reference, let compact else { return reference == nil && compact == nil }
        func histogram(_ old: ReferenceHistogram, _ new: CountHistogram) -> Bool {
            old.total == new.total && old.entries.map { [$0.bin, Int($0.count)] } == new.entries.map { [$0.bin, Int($0.count)] }
        }
        return LevelStats(reference) == compact
            && histogram(reference.heights, compact.heights) && histogram(reference.votes, compact.votes)
            && histogram(reference.safeAreas, compact.safeAreas)
            && reference.sources == compact.sources && reference.showAnimations == compact.showAnimations
    }

    @Test(arguments: [UInt64(1), 2, 3])
    func everyLevelOfEveryKeyMatchesTheReference(seed: UInt64) throws {
        let (reference, compact, fleet) = build(seed: seed, models: 60, deltas: 1_500)
        #expect(compact.bySeries.count == reference.bySeries.count && compact.seriesCount == reference.bySeries.count)
        #expect(Set(compact.bySeries.keys) == Set(reference.bySeries.keys))
        #expect(Set(compact.byModelLanguage.keys) == Set(reference.byModelLanguage.keys))
        #expect(compact.byModel.count == reference.byModel.count)
        #expect(Set(compact.keysByModel.keys) == Set(reference.keysByModel.keys))
        #expect(compact.modelsByLanguage == reference.modelsByLanguage)
        #expect(compact.osMajors == reference.osMajors && compact.screens == reference.screens)

        var mismatches: [String] = []
        for (key, stats) in reference.bySeries where !same(stats, compact.bySeries[key]) { mismatches.append("series \(key)") }
        for (key, stats) in reference.byModelLanguage where !same(stats, compact.byModelLanguage[key]) {
            mismatches.append("model+language \(key)")
        }
        for (key, stats) in reference.byModel where !same(stats, compact.byModel[key]) { mismatches.append("model \(key)") }
        for (model, keys) in reference.keysByModel where compact.keysByModel[model] != keys || compact.languages(ofModel: model) != keys {
            mismatches.append("keys of \(model)")
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) levels differ: \(mismatches.prefix(5))")
        // Unknown strings and keys answer nil, as a dictionary miss did.
        #expect(compact.series(SeriesKey(model: "iPhone99,9", osMajor: 26, language: "en-US", orientation: .portrait,
                                         keyboardType: "default")) == nil)
        #expect(compact.series(SeriesKey(model: fleet.models[1], osMajor: 99, language: "en-US", orientation: .portrait,
                                         keyboardType: "default")) == nil)
        #expect(compact.languages(ofModel: "iPhone99,9").isEmpty)

        // The fleet reaches what the compaction is about: levels that share, levels that own, spilled histograms.
        let shared = compact.modelLanguageSlots.values.filter(\.shared).count
        let spilled = compact.slots.filter { $0.heights.binCount > 1 }.count
        let capped = compact.slots.filter { $0.heights.binCount == LevelStats.binLimit }.count
        #expect(shared > 50 && shared < compact.modelLanguageSlots.count, "\(shared) of \(compact.modelLanguageSlots.count) shared")
        #expect(compact.modelSlots.values.contains { $0.shared } && compact.modelSlots.values.contains { !$0.shared })
        #expect(spilled > 50 && capped > 5, "\(spilled) multi-bin, \(capped) at the bin limit")
        #expect(compact.slots.contains { $0.showAnimations.count > 1 } && compact.slots.contains { $0.sources.count > 3 })
    }

    @Test(arguments: [UInt64(1), 2])
    func everyAnswerAndEveryListingMatchesTheReference(seed: UInt64) throws {
        let (reference, compact, fleet) = build(seed: seed, models: 60, deltas: 1_500)
        var settings = EstimatorSettings()
        settings.minSamples = 40
        settings.minSources = 3
        let estimators = [HeightEstimator(settings: settings), HeightEstimator(settings: settings, chain: .beforeOSAware)]
        var queries: [HeightQuery] = []
        for model in fleet.models + ["iPhone99,1"] {
            for language in fleet.languages + ["xx-XX"] {
                for osMajor in [nil, 17, 18, 26] as [Int?] {
                    for orientation in Orientation.allCases {
                        for keyboardType in ["default", "asciiCapableNumberPad"] {
                            queries.append(HeightQuery(model: model, language: language, osMajor: osMajor, orientation: orientation,
                                                       keyboardType: keyboardType,
                                                       screen: model == "iPhone99,1" ? fleet.screens[Int(osMajor ?? 0) % 3] : nil))
                        }
                    }
                }
            }
        }
        var bases: [EstimateBasis: Int] = [:]
        var differences: [String] = []
        for estimator in estimators {
            for query in queries {
                let expected = estimator.estimate(query, in: reference)
                let answer = estimator.estimate(query, in: compact)
                bases[answer.basis, default: 0] += 1
                if answer != expected { differences.append("\(query): \(expected) vs \(answer)") }
                if estimator.ownEstimate(query, in: compact) != estimator.ownEstimate(query, in: reference) {
                    differences.append("own \(query)")
                }
            }
            // `/v1/heights`: every model, with and without an OS major, and an unseen model by screen.
            for model in fleet.models + ["iPhone99,1"] {
                for osMajor in [nil, 26] as [Int?] {
                    let screens: [ScreenSize?] = model == "iPhone99,1" ? fleet.screens : [nil]
                    for screen in screens {
                        let expected = estimator.allEstimates(model: model, osMajor: osMajor, screen: screen, in: reference).serialized()
                        let listing = estimator.allEstimates(model: model, osMajor: osMajor, screen: screen, in: compact).serialized()
                        if listing != expected { differences.append("heights \(model) \(osMajor as Any) \(screen as Any)") }
                    }
                }
            }
        }
        #expect(differences.isEmpty, "\(differences.count) answers differ: \(differences.prefix(3))")
        // Every level of the chain answered some of them, so every level was compared.
        for basis in EstimateBasis.allCases {
            #expect((bases[basis] ?? 0) > 0, "no answer from \(basis.rawValue): \(bases)")
        }
    }

    /// A level fed by one exact key shares its slot; the second exact key gives it its own.
    @Test func aLevelSharesItsOnlyKeysSlotUntilASecondKeyFeedsIt() {
        func delta(os: Int, language: String, height: Int, count: Int64) -> AggregateDelta {
            var delta = AggregateDelta()
            let series = SeriesKey(model: "iPhone17,1", osMajor: os, language: language, orientation: .portrait, keyboardType: "default")
            delta.heights[HeightCountKey(series: series, placement: .docked, halfPoints: height)] = count
            delta.votes[SeriesBin(series: series, halfPoints: height)] = count
            delta.sources[series] = [.trusted]
            return delta
        }
        var index = HeightIndex()
        index.apply(delta(os: 26, language: "en-US", height: 672, count: 30))
        #expect(index.slots.count == 1, "key, model+language and model share one slot")
        index.apply(delta(os: 26, language: "en-US", height: 672, count: 5))
        #expect(index.slots.count == 1)
        let modelLanguage = ModelLanguageKey(model: "iPhone17,1", language: "en-US", orientation: .portrait, keyboardType: "default")
        #expect(index.modelLanguage(modelLanguage)?.heights.total == 35)
        index.apply(delta(os: 18, language: "en-US", height: 660, count: 10))
        #expect(index.slots.count == 4, "a second OS major: the new key, and model+language and model each a copy of their own")
        #expect(index.modelLanguage(modelLanguage)?.heights.total == 45)
        #expect(index.series(SeriesKey(model: "iPhone17,1", osMajor: 26, language: "en-US", orientation: .portrait,
                                       keyboardType: "default"))?.heights.total == 35)
        index.apply(delta(os: 26, language: "ja-JP", height: 700, count: 7))
        #expect(index.slots.count == 5, "ja-JP's model+language shares its only key; the model level already owns one")
        #expect(index.model(ModelKey(model: "iPhone17,1", orientation: .portrait, keyboardType: "default"))?.heights.total == 52)
    }

    /// One bin is held inline; a second spills; the forms compare by content.
    @Test func histogramsHoldOneBinInlineAndCompareByContent() {
        var inline = CountHistogram()
        inline.add(672, 3)
        inline.add(672, 2)
        var spilled = CountHistogram()
        spilled.add(672, 5)
        spilled.add(700, 1)
        #expect(inline.binCount == 1 && inline.total == 5 && inline.mode == 672 && inline.percentile(0.9) == 672)
        #expect(spilled.binCount == 2 && spilled.mode == 672 && spilled.percentile(0.9) == 700)
        #expect(inline == CountHistogram([672: 5]) && inline != spilled)
        var huge = CountHistogram()
        huge.add(Int(Int32.min), 2)  // no inline form for this bin: it spills
        huge.add(1 << 40, 1)
        #expect(huge.binCount == 2 && huge.total == 3 && huge.mode == Int(Int32.min) && huge.percentile(1) == 1 << 40)
        #expect(MemoryLayout<LevelStats>.size <= 120, "LevelStats is \(MemoryLayout<LevelStats>.size) bytes")
    }
}
