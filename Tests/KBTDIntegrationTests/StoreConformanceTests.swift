import Foundation
import KBTDCore
import KBTDPostgres
import KBTDStore
import Logging
import Testing

/// The two stores behind `TelemetryStore`.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgresql

    var testDescription: String { rawValue }

    /// SQLite always; PostgreSQL where it is installed (CI installs it).
    static var available: [StoreKind] { TestPostgres.available ? allCases : [.sqlite] }
}

/// A fresh, empty store of one kind: an SQLite file in a temporary directory,
/// or a database in a throwaway PostgreSQL cluster.
final class StoreUnderTest {
    let kind: StoreKind
    let directory = TestPaths.temporaryDirectory()
    let postgres: TestPostgres?
    private var databases: [PostgresDatabase] = []

    init(_ kind: StoreKind) throws {
        self.kind = kind
        postgres = kind == .postgresql ? try TestPostgres() : nil
    }

    deinit {
        for database in databases { database.close() }
        try? FileManager.default.removeItem(at: directory)
    }

    var path: String { directory.appendingPathComponent("kbtd.sqlite").path }

    /// Opens (creating and migrating) the store; every call is a new connection, as a restart is.
    func open(admission: IndexAdmission = IndexAdmission()) async throws -> any TelemetryStore & TelemetryReader {
        switch kind {
        case .sqlite:
            return try SQLiteTelemetryStore(path: path, admission: { admission })
        case .postgresql:
            let database = PostgresDatabase(url: try PostgresURL(postgres!.url), logger: Logger(label: "kbtd-test"))
            databases.append(database)
            return try await PostgresTelemetryStore(database: database, admission: { admission })
        }
    }
}

@Suite("Store conformance: the same cases on SQLite and PostgreSQL", .ownThreads, .timeLimit(.minutes(10)), .serialized)
struct StoreConformanceTests {
    /// docs/privacy.md: a network's keyed hash retires `source_retention_days` after it last reported
    /// the key; the key keeps its count of sources, and a report refreshes the time.
    @Test(arguments: StoreKind.available)
    func keyedSourcesRetireAfterTheirLastReportKeepingEachKeysCount(kind: StoreKind) async throws {
        let subject = try StoreUnderTest(kind)
        let store = try await subject.open()
        let a = SourceID(network: "198.51.100.1"), b = SourceID(network: "198.51.100.2")
        _ = try await store.commit([pendingBatch("1", receivedAt: 1_000, source: a), pendingBatch("2", receivedAt: 1_000, source: b),
                              pendingBatch("3", receivedAt: 1_000)])
        _ = try await store.commit([pendingBatch("4", receivedAt: 5_000, source: a)])
        let key = try #require(try await store.loadCounts().sources.keys.first)
        #expect(try await store.loadCounts().sources[key] == [a, b, .trusted])

        #expect(try await store.retireSources(seenBefore: 2_000) == 1)
        let after = try #require(try await store.loadCounts().sources[key])
        #expect(after.count == 3 && after.contains(a) && after.contains(.trusted) && !after.contains(b))
        #expect(after.filter { !$0.isNetworkHash && $0 != .trusted }.count == 1, "b is now a retired id")

        #expect(try await store.retireSources(seenBefore: 10_000) == 1)
        #expect(try await store.retireSources(seenBefore: 10_000) == 0)
        let last = try #require(try await subject.open().loadCounts().sources[key])
        #expect(last.count == 3 && last.filter(\.isNetworkHash).isEmpty && last.contains(.trusted))
    }

    @Test(arguments: StoreKind.available)
    func aBatchIDCountsOnceAndPruningForgetsIt(kind: StoreKind) async throws {
        let subject = try StoreUnderTest(kind)
        let store = try await subject.open()
        let first = try await store.commit([pendingBatch("a", receivedAt: 100, heights: [336, 337]),
                                      pendingBatch("b", receivedAt: 5_000, heights: [336, 336, 392]),
                                      pendingBatch("a", receivedAt: 100, heights: [336, 337])])
        #expect(first.stored == [true, true, false])
        #expect(first.added.animations.values.reduce(0, +) == 5)
        #expect(try await store.commit([pendingBatch("b", receivedAt: 5_000, heights: [1])]).stored == [false])
        #expect(try await store.batchIDCount() == 2)
        #expect(try await store.pruneBatchIDs(receivedBefore: 1_000) == 1)
        #expect(try await store.batchIDCount() == 1)
        // Past retention a retry counts again: documented behaviour.
        #expect(try await store.commit([pendingBatch("a", receivedAt: 6_000, heights: [336, 337])]).stored == [true])
        let counts = try await store.loadCounts()
        #expect(counts.animations.values.reduce(0, +) == 7)
        #expect(counts.heights.values.reduce(0, +) == 6)  // every third sample is a hide: no height
    }

    /// Keys without trusted data nobody reported since the cutoff go, admitted or not; a key
    /// reported later (admitted: `last_seen` moved by the commit; not admitted: by its registration) stays.
    @Test(arguments: StoreKind.available)
    func idleUntrustedKeysAgeOut(kind: StoreKind) async throws {
        let subject = try StoreUnderTest(kind)
        let store = try await subject.open()
        let day: Int64 = 86_400
        var first: [PendingBatch] = [pendingBatch("t", receivedAt: 100 * day, model: "Trusted1,1"),
                                     pendingBatch("l1", receivedAt: 100 * day, model: "Lonely1,1", source: SourceID(network: "10.9.0.1"))]
        for network in 1...3 {
            let source = SourceID(network: "10.\(network).0.1")
            first.append(pendingBatch("j\(network)", receivedAt: 100 * day, model: "Junk1,1", source: source))
            first.append(pendingBatch("a\(network)", receivedAt: 100 * day, model: "Alive1,1", source: source))
        }
        #expect(try await store.commit(first).admitted == 3)
        _ = try await store.commit([pendingBatch("a9", receivedAt: 140 * day, model: "Alive1,1", source: SourceID(network: "10.9.0.1")),
                              pendingBatch("l2", receivedAt: 140 * day, model: "Lonely1,1", source: SourceID(network: "10.9.0.2"))])
        #expect(try await store.pruneIdleKeys(lastSeenBefore: 130 * day, limit: 100).map(\.model) == ["Junk1,1"])
        var models: Set<String> = []
        try await subject.open().forEachKey { models.insert($0.model) }
        #expect(models == ["Trusted1,1", "Alive1,1", "Lonely1,1"])
        #expect(Set(try await subject.open().loadIndexCounts().seriesKeys.map(\.model)) == ["Trusted1,1", "Alive1,1"])
    }

    @Test(arguments: StoreKind.available)
    func countsSurviveReopeningAndReadBackExactly(kind: StoreKind) async throws {
        let subject = try StoreUnderTest(kind)
        var expected = AggregateDelta()
        do {
            let store = try await subject.open()
            for round in 0..<3 {
                let batches = (0..<4).map { i in
                    pendingBatch("r\(round)-\(i)", receivedAt: 3_600 * Int64(round) + 10, model: "iPhone1\(i),1",
                                 language: ["en-US", "ja-JP"][i % 2], heights: [336, 392.5, 260, 336, 401],
                                 screen: ScreenSize("393x852"))
                }
                let result = try await store.commit(batches)
                #expect(result.stored == [true, true, true, true])
                for batch in batches { expected.merge(batch.delta) }
            }
        }
        let reopened = try await subject.open()
        let counts = try await reopened.loadCounts()
        #expect(counts == expected)
        #expect(try await reopened.loadIndexCounts() == expected)
        let totals = try await reopened.statsTotals(StatsFilter())
        #expect(totals.keys == Int64(expected.seriesKeys.count))
        #expect(totals.samples == 60)
        #expect(try await reopened.statsTotals(StatsFilter(model: "iPhone10,1")).samples == 15)
        // Pages of 3 keys with a cursor read every key once, in order.
        var paged = AggregateDelta()
        var pages = 0
        var cursor: SeriesKey? = nil
        repeat {
            cursor = try await reopened.forEachPage(StatsFilter(), after: cursor, pageSize: 3, maxKeys: 3) { page in
                paged.merge(page)
                pages += 1
            }
        } while cursor != nil
        var withoutScreens = expected
        withoutScreens.screens = [:]
        #expect(paged == withoutScreens)
        #expect(pages == (expected.seriesKeys.count + 2) / 3)
        let hours = try await reopened.hourlyIngest(since: 0)
        #expect(hours.map(\.hour) == [0, 3_600, 7_200])
        #expect(hours.map(\.samples) == [20, 20, 20])
        #expect(hours.map(\.rejected) == [4, 4, 4])
    }

    @Test(arguments: StoreKind.available)
    func keysJoinTheIndexOnceConfirmedAndUnconfirmedOnesArePruned(kind: StoreKind) async throws {
        let subject = try StoreUnderTest(kind)
        let store = try await subject.open()
        let ten = [Double](repeating: 336, count: 10)
        let one = try await store.commit([pendingBatch("1", language: "fr-FR", heights: ten, source: SourceID(network: "198.51.100.1")),
                                    pendingBatch("2", language: "fr-FR", heights: ten, source: SourceID(network: "198.51.100.2"))])
        #expect(one.admitted == 0)
        #expect(one.added.seriesKeys.isEmpty)
        let two = try await store.commit([pendingBatch("3", language: "fr-FR", heights: ten, source: SourceID(network: "203.0.113.7"))])
        #expect(two.admitted >= 1)
        #expect(two.added.animations.filter { $0.key.series.language == "fr-FR" }.values.reduce(0, +) == 30)
        #expect(try await store.commit([pendingBatch("4", language: "de-DE", heights: ten)]).admitted >= 1)
        #expect(try await store.commit([pendingBatch("5", language: "xx-junk", heights: ten, source: SourceID(network: "192.0.2.66"))])
            .admitted == 0)
        #expect(Set(try await store.loadIndexCounts().seriesKeys.map(\.language)) == ["de-DE", "fr-FR"])
        let pruned = try await store.pruneUnconfirmedKeys(firstSeenBefore: 2_000, limit: 100)
        #expect(Set(pruned.map(\.language)) == ["xx-junk"])
        #expect(Set(try await store.loadCounts().seriesKeys.map(\.language)) == ["de-DE", "fr-FR"])
        var remaining: Set<String> = []
        try await store.forEachKey { remaining.insert($0.language) }
        #expect(remaining == ["de-DE", "fr-FR"])
    }

    /// A full index (4 keys) on every store: the same batches admit and displace the same keys
    /// (the weakest by `KeySupport`, ties by fingerprint), a key's `last_seen` day and new sources
    /// count into its support, and a reopened store loads the supports its commits built: the
    /// next displacement is the same too.
    @Test(arguments: StoreKind.available)
    func aFullIndexDisplacesTheSameKeysOnEveryStore(kind: StoreKind) async throws {
        let subject = try StoreUnderTest(kind)
        let rules = IndexAdmission(minSources: 3, maxIndexedKeys: 4)
        let day: Int64 = 86_400
        func reports(_ model: String, networks: ClosedRange<Int>, on date: Int64) -> [PendingBatch] {
            networks.map { pendingBatch("\(model)-\(date)-\($0)", receivedAt: date * day + 60, model: model,
                                        source: SourceID(network: "10.\($0).0.1")) }
        }
        func indexed(_ store: any TelemetryStore) async throws -> Set<String> {
            Set(try await store.loadIndexCounts().seriesKeys.map(\.model))
        }
        var store = try await subject.open(admission: rules)
        // Five keys, each confirmed by 3 networks on day 10: equal supports, so the lowest fingerprint waits.
        let junk = (0..<5).map { "Junk\($0),1" }
        let first = try await store.commit(junk.flatMap { reports($0, networks: 1...3, on: 10) })
        var keys: [String: SeriesKey] = [:]
        try await store.forEachKey { keys[$0.model] = $0 }
        let byFingerprint = junk.sorted { keys[$0]!.fingerprint < keys[$1]!.fingerprint }
        let waiting = byFingerprint[0]
        #expect(first.admitted == 4 && first.evicted.isEmpty)
        #expect(try await indexed(store) == Set(byFingerprint[1...]))

        // A trusted peer's key displaces the weakest indexed key: of equal supports, the lowest fingerprint.
        let trusted = try await store.commit([pendingBatch("trusted", receivedAt: 11 * day, model: "Trusted1,1")])
        #expect(trusted.admitted == 1 && trusted.evicted.map(\.model) == [byFingerprint[1]])

        // The waiting key gains a fourth network: 4 sources beat 3, and it enters with every count stored for it.
        let grown = try await store.commit(reports(waiting, networks: 4...4, on: 12))
        #expect(grown.admitted == 1 && grown.evicted.map(\.model) == [byFingerprint[2]])
        #expect(grown.added.heights.filter { $0.key.series.model == waiting }.values.reduce(0, +) == 4)

        // A known network reports an indexed key on day 13: no new source, but its last-seen day moves,
        // so a key confirmed on day 13 displaces the other day-10 key, not this one.
        let (seen, idle) = (byFingerprint[3], byFingerprint[4])
        let touched = try await store.commit(reports(seen, networks: 1...1, on: 13))
        #expect(touched.admitted == 0 && touched.evicted.isEmpty)
        let fresh = try await store.commit(reports("Fresh1,1", networks: 5...7, on: 13))
        #expect(fresh.admitted == 1 && fresh.evicted.map(\.model) == [idle])
        let expected: Set<String> = ["Trusted1,1", waiting, seen, "Fresh1,1"]
        #expect(try await indexed(store) == expected)

        // Reopened, the store loads the supports its commits built: `seen` and "Fresh1,1" tie
        // (3 sources, day 13), so the lower fingerprint gives way to a key confirmed on day 14.
        store = try await subject.open(admission: rules)
        #expect(try await indexed(store) == expected)
        try await store.forEachKey { keys[$0.model] = $0 }
        let tied = [seen, "Fresh1,1"].sorted { keys[$0]!.fingerprint < keys[$1]!.fingerprint }
        let later = try await store.commit(reports("Later1,1", networks: 5...7, on: 14))
        #expect(later.admitted == 1 && later.evicted.map(\.model) == [tied[0]])
        let final = expected.subtracting([tied[0]]).union(["Later1,1"])
        #expect(try await indexed(store) == final)
        #expect(try await indexed(subject.open(admission: rules)) == final)
        // The displaced keys keep their counts on disk.
        #expect(Set(try await store.loadCounts().seriesKeys.map(\.model)).isSuperset(of: junk))
    }

    /// Two PostgreSQL nodes on one database: a key one node displaced leaves the other node's index
    /// at that node's next commit of it (the registry row says so), its counts stop passing, and it
    /// competes again with the support the database holds; a key the first node admitted joins.
    @Test(.enabled(if: TestPostgres.available))
    func aKeyOneNodeDisplacedLeavesTheOtherNodesIndexAtItsNextCommit() async throws {
        let subject = try StoreUnderTest(.postgresql)
        let rules = IndexAdmission(minSources: 3, maxIndexedKeys: 2)
        let day: Int64 = 86_400
        func reports(_ model: String, networks: ClosedRange<Int>, id: String) -> [PendingBatch] {
            networks.map { pendingBatch("\(model)-\(id)-\($0)", receivedAt: 10 * day, model: model, source: SourceID(network: "10.\($0).0.1")) }
        }
        let first = try await subject.open(admission: rules)
        #expect(try await first.commit(reports("Key1,1", networks: 1...3, id: "a") + reports("Key2,1", networks: 1...3, id: "a")).admitted == 2)
        let second = try await subject.open(admission: rules)
        var keys: [String: SeriesKey] = [:]
        try await first.forEachKey { keys[$0.model] = $0 }
        let (weak, kept) = keys["Key1,1"]!.fingerprint < keys["Key2,1"]!.fingerprint ? ("Key1,1", "Key2,1") : ("Key2,1", "Key1,1")
        let strong = try await first.commit(reports("Strong1,1", networks: 1...4, id: "a"))
        #expect(strong.admitted == 1 && strong.evicted.map(\.model) == [weak])

        // The second node meets the new key: admitted elsewhere, its counts pass.
        let met = try await second.commit(reports("Strong1,1", networks: 1...1, id: "b"))
        #expect(met.admitted == 0 && met.evicted.isEmpty && met.added.seriesKeys.map(\.model) == ["Strong1,1"])
        // Then the displaced key: it leaves the second node's index, and ties the kept one, which stays.
        let displaced = try await second.commit(reports(weak, networks: 1...1, id: "b"))
        #expect(displaced.evicted.map(\.model) == [weak] && displaced.admitted == 0 && displaced.added.seriesKeys.isEmpty)
        #expect(Set(try await second.loadIndexCounts().seriesKeys.map(\.model)) == [kept, "Strong1,1"])
    }

    /// The same commits give the same counts, index and stats in both stores.
    @Test(.enabled(if: TestPostgres.available))
    func bothStoresHoldTheSameCountsForTheSameCommits() async throws {
        let sqlite = try StoreUnderTest(.sqlite), postgres = try StoreUnderTest(.postgresql)
        let stores = [try await sqlite.open(), try await postgres.open()]
        var generator = SplitMix64(seed: 14)
        for round in 0..<20 {
            var batches: [PendingBatch] = []
            for i in 0..<8 {
                let heights = (0..<Int(generator.next() % 12 + 1)).map { _ in 250 + Double(generator.next() % 300) / 2 }
                let source = generator.next() % 3 == 0 ? SourceID.trusted : SourceID(network: "10.0.\(generator.next() % 5).0")
                batches.append(pendingBatch("id-\(generator.next() % 120)", receivedAt: Int64(round) * 1_800,
                                            model: "iPhone\(generator.next() % 4),1", language: ["en-US", "ja-JP", "emoji"][i % 3],
                                            heights: heights, source: source))
            }
            var results: [CommitResult] = []
            for store in stores { results.append(try await store.commit(batches)) }
            #expect(results[0].stored == results[1].stored)
            #expect(results[0].admitted == results[1].admitted)
            #expect(results[0].added == results[1].added)
        }
        #expect(try await stores[0].loadCounts() == stores[1].loadCounts())
        #expect(try await stores[0].loadIndexCounts() == stores[1].loadIndexCounts())
        #expect(try await stores[0].statsTotals(StatsFilter()) == stores[1].statsTotals(StatsFilter()))
        #expect(try await stores[0].hourlyIngest(since: 0) == stores[1].hourlyIngest(since: 0))
        #expect(try await stores[0].batchIDCount() == stores[1].batchIDCount())
    }
}
