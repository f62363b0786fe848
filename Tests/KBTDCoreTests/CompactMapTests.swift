@testable import KBTDCore
import Testing

@Suite struct CompactMapTests {
    /// Random inserts, updates and removals (a removal moves the last element into the gap) leave
    /// the map holding exactly what a `Dictionary` given the same operations holds.
    @Test(arguments: [UInt64(1), 2, 3])
    func holdsWhatADictionaryHoldsThroughInsertsUpdatesAndRemovals(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var map = CompactMap<UInt64, Int>()
        var reference: [UInt64: Int] = [:]
        for step in 0..<20_000 {
            let key = random.next() % 2_000
            switch random.next() % 4 {
            case 0:
                #expect(map.removeValue(forKey: key) == reference.removeValue(forKey: key))
            case 1:
                map[key] = nil
                reference[key] = nil
            default:
                map[key] = step
                reference[key] = step
            }
            #expect(map[key] == reference[key])
        }
        #expect(map.count == reference.count)
        #expect(map.isEmpty == reference.isEmpty)
        #expect(Dictionary(uniqueKeysWithValues: map.map { ($0.key, $0.value) }) == reference)
        #expect(Set(map.keys) == Set(reference.keys))
        #expect(map.values.sorted() == reference.values.sorted())
        for (key, value) in reference { #expect(map[key] == value) }
    }

    @Test func removingTheLastOrOnlyElementLeavesTheRest() {
        var map = CompactMap<String, Int>()
        map["a"] = 1
        map["b"] = 2
        map["c"] = 3
        #expect(map.removeValue(forKey: "c") == 3)
        #expect(map.removeValue(forKey: "a") == 1)
        #expect(map.removeValue(forKey: "a") == nil)
        #expect(map.count == 1 && map["b"] == 2)
        map["b"] = nil
        #expect(map.isEmpty && map["b"] == nil)
    }
}
