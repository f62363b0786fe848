@testable import KBTDCore
import Testing

/// `SeriesKey` carries its fields' hash: equal keys hash alike however they were made, a changed
/// field changes the hash with it, and keys differing in any one field are different.
@Suite("SeriesKey: the hash it carries")
struct SeriesKeyTests {
    static func key(model: String = "iPhone17,1", osMajor: Int = 26, language: String = "en-US",
                    orientation: Orientation = .portrait, keyboardType: String = "default") -> SeriesKey {
        SeriesKey(model: model, osMajor: osMajor, language: language, orientation: orientation, keyboardType: keyboardType)
    }

    @Test func equalKeysMadeApartAreEqualAndHashAlike() {
        // Strings built at run time (other storage) against literals.
        let a = Self.key(model: ["iPhone17", "1"].joined(separator: ","), language: String("en-US".reversed().reversed()))
        let b = Self.key()
        #expect(a == b && a.hashValue == b.hashValue)
        #expect(Set([a, b]).count == 1)
        #expect([a: 1][b] == 1)
    }

    @Test func eachFieldTellsKeysApart() {
        let base = Self.key()
        let others = [Self.key(model: "iPhone16,2"), Self.key(osMajor: 18), Self.key(language: "ja-JP"),
                      Self.key(orientation: .landscape), Self.key(keyboardType: "numberPad")]
        for other in others {
            #expect(other != base)
        }
        #expect(Set(others + [base]).count == 6)
    }

    @Test func aChangedFieldChangesTheHashWithIt() {
        var changed = Self.key()
        changed.model = "iPhone16,2"
        changed.osMajor = 18
        changed.language = "ja-JP"
        changed.orientation = .landscape
        changed.keyboardType = "numberPad"
        let made = Self.key(model: "iPhone16,2", osMajor: 18, language: "ja-JP", orientation: .landscape, keyboardType: "numberPad")
        #expect(changed == made && changed.hashValue == made.hashValue)
        #expect([made: 1][changed] == 1)
        changed.model = "iPhone17,1"
        #expect(changed != made && [made: 1][changed] == nil)
    }
}

/// The count keys hash one word (`SeriesKey.word`): equal keys hash alike through every path a
/// `Set`, a `Dictionary` or a `Hasher` takes; keys of one series that differ in any field differ in
/// that word (each field folded in by a bijection), so a table of them holds each apart.
@Suite("Count keys: one word hashed")
struct CountKeyHashTests {
    static let series = SeriesKeyTests.key()

    /// `hashValue`, a `Hasher` fed the key, and the raw hash with the seed a table would use, for
    /// keys made twice (strings built at run time against literals); another seed, another hash.
    static func hashesAlike<Key: Hashable>(_ a: Key, _ b: Key) -> Bool {
        var (hashA, hashB) = (Hasher(), Hasher())
        a.hash(into: &hashA)
        b.hash(into: &hashB)
        return a == b && a.hashValue == b.hashValue && hashA.finalize() == hashB.finalize()
            && a._rawHashValue(seed: 12_345) == b._rawHashValue(seed: 12_345)
            && a._rawHashValue(seed: 12_345) != a._rawHashValue(seed: 54_321)
    }

    @Test func equalKeysHashAlikeByEveryPath() {
        let other = SeriesKeyTests.key(model: ["iPhone17", "1"].joined(separator: ","))
        #expect(Self.hashesAlike(HeightCountKey(series: Self.series, placement: .docked, halfPoints: 580),
                                 HeightCountKey(series: other, placement: .docked, halfPoints: 580)))
        #expect(Self.hashesAlike(AnimationCountKey(series: Self.series, event: .change, bin: AnimationBin(durationMs: 250, curve: 7)),
                                 AnimationCountKey(series: other, event: .change, bin: AnimationBin(durationMs: 250, curve: 7))))
        #expect(Self.hashesAlike(ColdStartCountKey(series: Self.series, preloaded: true, bucket: 400),
                                 ColdStartCountKey(series: other, preloaded: true, bucket: 400)))
        #expect(Self.hashesAlike(SeriesBin(series: Self.series, halfPoints: 68), SeriesBin(series: other, halfPoints: 68)))
        #expect(Self.hashesAlike(ReleaseBin(series: Self.series, minor: 2, halfPoints: 580),
                                 ReleaseBin(series: other, minor: 2, halfPoints: 580)))
        #expect(Self.hashesAlike(ReleaseKey(series: Self.series, minor: 2), ReleaseKey(series: other, minor: 2)))
        #expect(Self.hashesAlike(DayVoteBin(series: Self.series, day: 20_417, halfPoints: 580),
                                 DayVoteBin(series: other, day: 20_417, halfPoints: 580)))
        #expect(Self.hashesAlike(Self.series, other))
    }

    @Test func keysOfOneSeriesDifferingInAFieldHaveDifferentWords() {
        // Every pair of small fields a count key folds in, negative ones included: no two alike.
        var words: Set<Int> = []
        var count = 0
        for a in -2...3 {
            for b in -300...300 {
                for c in [0, 1, 7, -1] {
                    words.insert(Self.series.word(a, b, c))
                    count += 1
                }
            }
        }
        #expect(words.count == count)
        // And the tables hold every key apart.
        var heights: [HeightCountKey: Int64] = [:]
        for placement in Placement.allCases {
            for halfPoints in 0..<1_000 {
                heights[HeightCountKey(series: Self.series, placement: placement, halfPoints: halfPoints), default: 0] += 1
            }
        }
        #expect(heights.count == 3_000 && heights.values.allSatisfy { $0 == 1 })
        var animations: Set<AnimationCountKey> = []
        for event in KeyboardEvent.allCases {
            for duration in 0..<200 {
                for curve in 0..<8 {
                    animations.insert(AnimationCountKey(series: Self.series, event: event, bin: AnimationBin(durationMs: duration, curve: curve)))
                }
            }
        }
        #expect(animations.count == 3 * 200 * 8)
        #expect(Set(Placement.allCases.map(\.ordinal)).count == Placement.allCases.count)
        #expect(Set(KeyboardEvent.allCases.map(\.ordinal)).count == KeyboardEvent.allCases.count)
    }
}
