import KBTDCore
import Testing

/// Admission to the in-memory index, decided once for every store (`IndexedKeys`): which
/// confirmed key enters, which indexed key a full index gives up for it, how a commit's
/// reports count into support. No I/O: each case runs in microseconds.
@Suite("Index admission: one decision for every store")
struct IndexAdmissionTests {
    static func key(_ model: String, language: String = "en-US") -> SeriesKey {
        SeriesKey(model: model, osMajor: 26, language: language, orientation: .portrait, keyboardType: "default")
    }

    static let day: Int64 = 86_400

    @Test func theRoomRuleFillsStrongestFirstAndNeverBelowZero() {
        let candidates = [(Self.key("iPhone1,1"), KeySupport(trusted: false, sources: 3, lastSeenDay: 10)),
                          (Self.key("iPhone9,9"), KeySupport(trusted: true, sources: 1, lastSeenDay: 10)),
                          (Self.key("iPhone5,5"), KeySupport(trusted: false, sources: 5, lastSeenDay: 10))]
        let some = IndexedKeys.fill(candidates, indexed: 8, capacity: 10)
        #expect(some.entering.map(\.0.model) == ["iPhone9,9", "iPhone5,5"])
        #expect(some.waiting.map(\.0.model) == ["iPhone1,1"])
        let over = IndexedKeys.fill(candidates, indexed: 12, capacity: 10)
        #expect(over.entering.isEmpty && over.waiting.count == 3)
        #expect(IndexedKeys.fill(candidates, indexed: 0, capacity: 10).entering.count == 3)

        let rules = IndexAdmission(minSources: 3, maxIndexedKeys: 10)
        #expect(rules.confirms(KeySupport(trusted: true, sources: 0, lastSeenDay: 0)))
        #expect(rules.confirms(KeySupport(trusted: false, sources: 3, lastSeenDay: 0)))
        #expect(!rules.confirms(KeySupport(trusted: false, sources: 2, lastSeenDay: 0)))
    }

    /// A store's rows make a support one way: sources counted up to 8, `last_seen` seconds to a UTC day.
    @Test func aStoredSupportCountsEightSourcesAtMostAndDaysFromSeconds() {
        #expect(KeySupport(sources: 12, trusted: false, lastSeen: 3 * Self.day + 5) == KeySupport(trusted: false, sources: 8, lastSeenDay: 3))
        #expect(KeySupport(sources: 2, trusted: true, lastSeen: -1).lastSeenDay == -1, "a time before 1970 rounds down")
        #expect(KeySupport(trusted: true, sources: 0, lastSeenDay: 0) > KeySupport(trusted: false, sources: 8, lastSeenDay: 99))
        #expect(KeySupport(trusted: false, sources: 4, lastSeenDay: 0) > KeySupport(trusted: false, sources: 3, lastSeenDay: 99))
    }

    /// A review counts the commit's new sources, trusted data and day into indexed keys, says
    /// whose `last_seen` moves (once a key a UTC day), and changes nothing until it is applied.
    @Test func aReviewCountsReportsIntoIndexedKeysOnlyWhenApplied() {
        let (a, b, c) = (Self.key("A1,1"), Self.key("B1,1"), Self.key("C1,1"))
        var index = IndexedKeys()
        index.load(a, sources: 3, trusted: false, lastSeen: 10 * Self.day)
        index.load(b, sources: 8, trusted: false, lastSeen: 11 * Self.day + 60)
        let review = index.review([a, b, c], newSources: [a: (2, false), c: (1, false)], trusted: [c], now: 11 * Self.day + 7)
        #expect(Set(review.passing) == [a, b] && review.unindexed == [c])
        #expect(review.touched == [a], "b was seen today already")
        #expect(index[a] == KeySupport(trusted: false, sources: 3, lastSeenDay: 10), "nothing moves before apply")
        index.apply(review)
        #expect(index[a] == KeySupport(trusted: false, sources: 5, lastSeenDay: 11))
        #expect(index[b] == KeySupport(trusted: false, sources: 8, lastSeenDay: 11))
        #expect(index[c] == nil)
        // The same day again: nothing to write.
        let again = index.review([a], newSources: [:], trusted: [], now: 11 * Self.day + 900)
        #expect(again.touched.isEmpty && again.passing == [a])
        // A trusted report of an indexed key makes it trusted.
        let trusted = index.review([a, c], newSources: [a: (1, true)], trusted: [a], now: 12 * Self.day)
        index.apply(trusted)
        #expect(index[a] == KeySupport(trusted: true, sources: 6, lastSeenDay: 12))
    }

    /// An unindexed key's support is what its store holds plus the commit: a trusted batch of the
    /// commit confirms it alone; two networks do not.
    @Test func admissionConfirmsFromStoredSourcesAndTheCommitsTrustedBatches() {
        let (trusted, two, three) = (Self.key("T1,1"), Self.key("Two1,1"), Self.key("Three1,1"))
        var index = IndexedKeys()
        let review = index.review([trusted, two, three], newSources: [:], trusted: [trusted], now: 5 * Self.day)
        let placement = index.admit(review, stored: [two: (2, false), three: (3, false)], rules: IndexAdmission(minSources: 3))
        #expect(Set(placement.admitted.map(\.key)) == [trusted, three] && placement.evicted.isEmpty)
        #expect(placement.admitted.first { $0.key == trusted }?.support == KeySupport(trusted: true, sources: 0, lastSeenDay: 5))
        index.apply(placement)
        #expect(index.count == 2 && index[two] == nil)
    }

    /// A full index gives up its weakest key to a stronger one; a key no stronger than the
    /// weakest stays out; trusted keys are never displaced by untrusted ones.
    @Test func aFullIndexDisplacesItsWeakestKeyOnlyForAStrongerOne() {
        var index = IndexedKeys()
        let trusted = Self.key("Trusted1,1"), old = Self.key("Old1,1"), fresh = Self.key("Fresh1,1")
        index.insert(trusted, support: KeySupport(trusted: true, sources: 1, lastSeenDay: 1))
        index.insert(old, support: KeySupport(trusted: false, sources: 3, lastSeenDay: 1))
        index.insert(fresh, support: KeySupport(trusted: false, sources: 3, lastSeenDay: 9))
        let equal = index.place([(Self.key("New1,1"), KeySupport(trusted: false, sources: 3, lastSeenDay: 1))], capacity: 3)
        #expect(equal.admitted.isEmpty && equal.evicted.isEmpty, "as strong as the weakest: stays out")
        let stronger = index.place([(Self.key("New1,1"), KeySupport(trusted: false, sources: 8, lastSeenDay: 1)),
                                    (Self.key("New2,1"), KeySupport(trusted: false, sources: 4, lastSeenDay: 1)),
                                    (Self.key("New3,1"), KeySupport(trusted: false, sources: 4, lastSeenDay: 1))], capacity: 3)
        #expect(stronger.evicted == [old, fresh], "weakest first")
        #expect(stronger.admitted.count == 2 && stronger.admitted[0].key.model == "New1,1")
        #expect(index.count == 3 && index[old] != nil, "decided, not applied")
        index.apply(stronger)
        #expect(index.count == 3 && index[old] == nil && index[fresh] == nil && index[trusted] != nil)
        let many = (Self.key("Many1,1"), KeySupport(trusted: false, sources: 8, lastSeenDay: 99))
        let untrusted = index.place([many], capacity: 3)
        #expect(untrusted.evicted.count == 1 && index[untrusted.evicted[0]]?.sources == 4, "the 4-source key goes, not the trusted one")
        var allTrusted = IndexedKeys()
        for model in ["T1,1", "T2,1"] { allTrusted.insert(Self.key(model), support: KeySupport(trusted: true, sources: 1, lastSeenDay: 0)) }
        let refused = allTrusted.place([many], capacity: 2)
        #expect(refused.admitted.isEmpty && refused.evicted.isEmpty)
    }

    /// Between equal supports the key with the lower fingerprint is the weaker, whatever the order
    /// keys were loaded or reported in: every store gives up the same key.
    @Test func tiesGoByFingerprintWhateverTheOrder() {
        let keys = (0..<6).map { Self.key("Tie\($0),1") }
        let support = KeySupport(trusted: false, sources: 3, lastSeenDay: 4)
        let weakest = keys.min { $0.fingerprint < $1.fingerprint }!
        var choices: Set<SeriesKey> = []
        for order in [keys, keys.reversed(), keys.sorted { $0.model.hashValue < $1.model.hashValue }] {
            var index = IndexedKeys()
            for key in order { index.insert(key, support: support) }
            let placement = index.place([(Self.key("Strong1,1"), KeySupport(trusted: false, sources: 4, lastSeenDay: 4))], capacity: 6)
            choices.formUnion(placement.evicted)
        }
        #expect(choices == [weakest])
        // Candidates tied for the last free place: the higher fingerprint enters, in any order.
        let tied = keys.map { ($0, support) }
        let entering = Set([IndexedKeys().place(tied, capacity: 2), IndexedKeys().place(tied.reversed(), capacity: 2)]
            .flatMap { $0.admitted.map(\.key) })
        #expect(entering == Set(keys.sorted { $0.fingerprint > $1.fingerprint }.prefix(2)))
    }

    /// Random commits against the rule written the slow way (every candidate, strongest first,
    /// against the weakest key of the whole index): the same keys enter and leave, the same
    /// supports remain.
    @Test func placementsMatchTheRuleWrittenTheSlowWay() {
        var generator = SplitMix64(seed: 7)
        var index = IndexedKeys()
        var reference: [SeriesKey: KeySupport] = [:]
        let capacity = 12
        func rank(_ entry: (key: SeriesKey, support: KeySupport)) -> (KeySupport, UInt64) { (entry.support, entry.key.fingerprint) }
        func above(_ a: (KeySupport, UInt64), _ b: (KeySupport, UInt64)) -> Bool { a.0 != b.0 ? a.0 > b.0 : a.1 > b.1 }
        for round in 0..<300 {
            var candidates: [(SeriesKey, KeySupport)] = []
            for _ in 0..<Int(generator.next() % 5) {
                let key = Self.key("M\(generator.next() % 40),1")
                guard reference[key] == nil, !candidates.contains(where: { $0.0 == key }) else { continue }
                candidates.append((key, KeySupport(trusted: generator.next() % 9 == 0, sources: Int(generator.next() % 6),
                                                   lastSeenDay: Int64(round / 20))))
            }
            // The slow rule.
            var expectedIn: [SeriesKey] = [], expectedOut: [SeriesKey] = []
            for candidate in candidates.sorted(by: { above(rank($0), rank($1)) }) {
                if reference.count < capacity {
                    reference[candidate.0] = candidate.1
                    expectedIn.append(candidate.0)
                    continue
                }
                let weakest = reference.map { (key: $0.key, support: $0.value) }.min { above(rank($1), rank($0)) }!
                guard candidate.1 > weakest.support else { break }
                reference[weakest.key] = nil
                reference[candidate.0] = candidate.1
                expectedOut.append(weakest.key)
                expectedIn.append(candidate.0)
            }
            let placement = index.place(candidates, capacity: capacity)
            #expect(placement.admitted.map(\.key) == expectedIn, "round \(round)")
            #expect(placement.evicted == expectedOut, "round \(round)")
            index.apply(placement)
            // Some indexed keys gain support between commits, as reports do.
            if let grown = reference.keys.sorted(by: { $0.fingerprint < $1.fingerprint }).first(where: { _ in generator.next() % 3 == 0 }) {
                let support = reference[grown]!
                let review = index.review([grown], newSources: [grown: (1, false)], trusted: [],
                                          now: max(support.lastSeenDay, Int64(round / 20)) * Self.day)
                index.apply(review)
                reference[grown] = KeySupport(trusted: support.trusted, sources: min(8, support.sources + 1),
                                              lastSeenDay: max(support.lastSeenDay, Int64(round / 20)))
            }
        }
        #expect(index.count == reference.count)
        for (key, support) in reference { #expect(index[key] == support) }
    }
}
