import Foundation
@testable import KBTDCore
import Testing

/// A group commit adds its new batches' counts up in one pass into tables sized
/// once (`AggregateDelta(summing:)`), where it merged them one by one (`merge(_:)`). The sum must be
/// that merge, table by table, whatever the batches hold.
@Suite("Summing a commit's deltas")
struct AggregateSumTests {
    static let models = ["iPhone17,1", "iPhone16,2", "iPhone14,6", "iPhone12,1"]
    static let languages = ["en-US", "ja-JP", "zh-Hans", "de-DE", "emoji", "a-language-name-past-fifteen-bytes"]

    /// A batch's delta as ingest builds it: samples of a few keys, a source (a trusted peer, one of a
    /// few networks, or none at all), its release and day, sometimes a screen.
    static func randomDelta(_ random: inout SplitMix64) -> AggregateDelta {
        let model = models[Int(random.next() % UInt64(models.count))]
        let device = Device(model: model, os: "26.\(random.next() % 3)", osMajor: 25 + Int(random.next() % 2))
        var delta = AggregateDelta()
        for _ in 0..<Int(random.next() % 40) {
            let event: KeyboardEvent = [.show, .hide, .change][Int(random.next() % 3)]
            let placement = random.next() % 5
            delta.add(Sample(t: 0, event: event, language: languages[Int(random.next() % UInt64(languages.count))],
                             orientation: random.next() % 4 == 0 ? .landscape : .portrait, keyboardType: random.next() % 6 == 0 ? "email" : "default",
                             height: 280 + Double(random.next() % 40) / 2, safeAreaBottom: random.next() % 2 == 0 ? 34 : 21,
                             duration: 0.25, curve: 7, coldStartMs: random.next() % 5 == 0 ? 100 + Double(random.next() % 2_000) : nil,
                             preloaded: random.next() % 2 == 0, floating: placement == 0, hardwareKeyboard: placement == 1),
                      device: device)
        }
        switch random.next() % 3 {
        case 0: break  // a trusted peer's (`add` names it)
        case 1:
            var policy = SourcePolicy()
            policy.apply(to: &delta, source: SourceID(network: "198.51.100.\(random.next() % 5)", key: SourceKey(k0: 1, k1: 2)),
                         now: 1_000_000)
        default:
            delta.sources = [:]  // as a delta with no sources at all
        }
        if random.next() % 3 == 0 { delta.screens[ModelScreenKey(model: model, screen: ScreenSize(width: 390, height: 844)), default: 0] += 1 }
        delta.recordRelease(os: device.os)
        delta.recordDay(receivedAt: Int64(random.next() % 3) * 86_400 + 5)
        return delta
    }

    /// What a commit did before: the first delta as it is, then each next one merged into it.
    static func mergedOneByOne(_ deltas: [AggregateDelta]) -> AggregateDelta {
        guard var merged = deltas.first else { return AggregateDelta() }
        for delta in deltas.dropFirst() { merged.merge(delta) }
        return merged
    }

    @Test func theSumOfRandomDeltasIsTheirMergeOneByOne() {
        var random = SplitMix64(seed: 27)
        for round in 0..<200 {
            var deltas = (0..<Int(random.next() % 30)).map { _ in Self.randomDelta(&random) }
            // The same batch's counts twice (a retry stored under another id, or two phones alike).
            if let repeated = deltas.randomElement(using: &random), round % 2 == 0 { deltas.append(repeated) }
            let sum = AggregateDelta(summing: deltas)
            let merged = Self.mergedOneByOne(deltas)
            #expect(sum == merged, "round \(round): \(deltas.count) deltas")
            #expect(sum.seriesKeys == merged.seriesKeys)
        }
    }

    @Test func noDeltasSumToNothingAndOneIsTakenAsItIs() {
        var random = SplitMix64(seed: 5)
        #expect(AggregateDelta(summing: []) == AggregateDelta())
        let one = Self.randomDelta(&random)
        #expect(AggregateDelta(summing: [one]) == one)
        #expect(AggregateDelta(summing: [AggregateDelta(), one, AggregateDelta()]) == one)
    }

    @Test func aKeysSourcesAreUnitedAndTheBatchesOwnSetsAreLeftAlone() {
        let key = SeriesKey(model: "iPhone17,1", osMajor: 26, language: "en-US", orientation: .portrait, keyboardType: "default")
        let (a, b) = (SourceID(network: "198.51.100.1", key: SourceKey(k0: 1, k1: 2)), SourceID(network: "198.51.100.2", key: SourceKey(k0: 1, k1: 2)))
        var first = AggregateDelta(), second = AggregateDelta(), third = AggregateDelta()
        first.sources[key] = [a]
        first.releaseSources[ReleaseKey(series: key, minor: 1)] = [a]
        second.sources[key] = [b, .trusted]
        second.releaseSources[ReleaseKey(series: key, minor: 1)] = [b]
        third.sources[key] = [a]
        let sum = AggregateDelta(summing: [first, second, third])
        #expect(sum.sources == [key: [a, b, .trusted]])
        #expect(sum.releaseSources == [ReleaseKey(series: key, minor: 1): [a, b]])
        // The sum shares the first set and adds to its own copy: the batches' deltas are unchanged.
        #expect(first.sources == [key: [a]] && second.sources == [key: [b, .trusted]])
    }

    @Test func aKeysFingerprintIsItsFieldsTextHashed() {
        // The fingerprint as it was written first: each field's text through `String`, FNV-1a, separated.
        func reference(_ key: SeriesKey) -> UInt64 {
            var hash = Fingerprint.of(bytes: key.model.utf8)
            for field in [String(key.osMajor), key.language, key.orientation.rawValue, key.keyboardType] {
                hash = Fingerprint.of(bytes: field.utf8, continuing: (hash ^ 0x1F) &* 0x0000_0100_0000_01B3)
            }
            return hash
        }
        var random = SplitMix64(seed: 3)
        for osMajor in [0, 1, 9, 10, 26, 99, 100, 1_000, 9_999, 123_456_789, -1, -26, Int.max, Int.min] + (0..<50).map({ _ in Int(random.next() % 20_000) }) {
            for language in Self.languages + ["", "日本語-JP"] {
                let key = SeriesKey(model: Self.models[abs(osMajor % 4)], osMajor: osMajor, language: language,
                                    orientation: osMajor % 2 == 0 ? .portrait : .landscape, keyboardType: "default")
                #expect(key.fingerprint == reference(key), "\(key)")
            }
        }
    }
}
