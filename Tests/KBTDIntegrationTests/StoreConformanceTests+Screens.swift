import Foundation
import KBTDCore
@testable import KBTDPostgres
@testable import KBTDStore
import Logging
import Testing

/// A batch of `count` docked ja-JP shows at `height` from client network `network`, on a device
/// reporting `screen` (its keys, release and screen attributed to the network, as ingest does).
func networkScreenBatch(_ id: String, screen: String, network: Int, model: String, height: Double, count: Int,
                        receivedAt: Int64) -> PendingBatch {
    var batch = networkReleaseBatch(id, os: "26.1", network: network, model: model, height: height, count: count,
                                    receivedAt: receivedAt)
    batch.delta.recordScreen(ScreenSize(screen))
    return batch
}

/// What one store holds of the screen scenario: its rows and the index built from its commits
/// and from a reopening.
struct ScreenOutcome {
    /// `model|screen|half points|samples|votes` of `screen_counts`, sorted.
    var counts: [String]
    /// `model|screen|source` of `screen_sources`, sorted.
    var sources: [String]
    /// Per key (its model): each screen and its stats (`HeightIndex.screens(of:)`), live and as a
    /// reopened store loads them.
    var live: [String: [HeldScreen]]
    var loaded: [String: [HeldScreen]]

    struct HeldScreen: Equatable, CustomStringConvertible {
        var screen: ScreenSize
        var stats: ReleaseStats
        var description: String { "\(screen): \(stats.samples) samples, \(stats.support.sources) sources" }
    }

    func screens(of model: String) -> [String] { (live[model] ?? []).map(\.screen.description) }
}

extension StoreConformanceTests {
    static let day: Int64 = 86_400
    static let screenModels = ["iPhone17,1", "iPhone17,2", "iPhone17,3", "iPhone17,4"]
    /// Screens network 9 sprays on iPhone17,1's key, weakest first, in two commits.
    static let sprayed = ["300x600", "301x601", "302x602", "303x603", "304x604", "305x605"]

    static func screenKey(_ model: String) -> SeriesKey {
        SeriesKey(model: model, osMajor: 26, language: "ja-JP", orientation: .portrait, keyboardType: "default")
    }

    /// Lines of `sql` (one text column) as the store under test holds them.
    static func lines(_ sql: String, _ subject: StoreUnderTest) throws -> [String] {
        var found: [String] = []
        switch subject.kind {
        case .sqlite:
            try SQLiteConnection(path: subject.path, mode: .readOnly).prepare(sql).forEachRow { found.append($0.text(0)) }
        case .postgresql:
            found = try subject.postgres!.psql("kbtd", sql).split(separator: "\n").map(String.init)
        }
        return found.sorted()
    }

    static func screenRows(_ subject: StoreUnderTest) throws -> (counts: [String], sources: [String]) {
        (try lines("""
            SELECT model || '|' || screen || '|' || CAST(height_bin * 2 AS INTEGER) || '|' || samples || '|' || votes FROM screen_counts
            """, subject),
         try lines("SELECT model || '|' || screen || '|' || source FROM screen_sources", subject))
    }

    static func screens(in index: HeightIndex) -> [String: [ScreenOutcome.HeldScreen]] {
        var found: [String: [ScreenOutcome.HeldScreen]] = [:]
        for model in screenModels {
            found[model] = index.screens(of: screenKey(model)).map { ScreenOutcome.HeldScreen(screen: $0.screen, stats: $0.stats) }
        }
        return found
    }

    /// Three networks report every key on two screens (a standard and a zoomed one); seven more
    /// networks report iPhone17,2's standard screen (8 sources are kept); network 9 sprays six
    /// more screens on iPhone17,1 (4 screens are kept, the two supported ones among them);
    /// iPhone17,4, reported only on day 100, goes idle and is deleted with its screen rows.
    static func runScreenScenario(_ kind: StoreKind) async throws -> ScreenOutcome {
        let subject = try StoreUnderTest(kind)
        let store = try await subject.open()
        var live = HeightIndex()
        func commit(_ batches: [PendingBatch]) async throws {
            live.apply(try await store.commit(batches).added)
        }
        func honest(_ model: String, at day: Int64) -> [PendingBatch] {
            let height = ReleaseFleet.base(model) + ReleaseFleet.candidateBar
            return (1...3).flatMap { network in
                [networkScreenBatch("\(model)-std-\(network)", screen: "393x852", network: network, model: model, height: height,
                                    count: 60, receivedAt: day * Self.day),
                 networkScreenBatch("\(model)-zoom-\(network)", screen: "320x693", network: network, model: model,
                                    height: height - 24, count: 30, receivedAt: day * Self.day)]
            }
        }
        try await commit(honest("iPhone17,4", at: 100))
        try await commit(Self.screenModels.dropLast().flatMap { honest($0, at: 140) })
        let more = (4...10).map { network in
            networkScreenBatch("more-\(network)", screen: "393x852", network: network, model: "iPhone17,2",
                               height: ReleaseFleet.base("iPhone17,2") + ReleaseFleet.candidateBar, count: 2, receivedAt: 140 * Self.day)
        }
        // Networks 4-6, then 7 and 8 fill the 8 places; 9 and 10 find none. (Within one commit,
        // which of more new sources than places are kept is each store's own.)
        for part in [more[0..<3], more[3..<5], more[5...]] { try await commit(Array(part)) }
        for part in [Self.sprayed.prefix(3), Self.sprayed.dropFirst(3)] {
            try await commit(part.enumerated().map { offset, screen in
                networkScreenBatch("spray-\(screen)", screen: screen, network: 9, model: "iPhone17,1", height: 300,
                                   count: 5 + Self.sprayed.firstIndex(of: screen)!, receivedAt: 140 * Self.day + Int64(offset))
            })
        }

        // The idle key holds screen rows until it is deleted, then none, in the store and in a new index.
        let before = try screenRows(subject)
        #expect(before.counts.contains { $0.hasPrefix("iPhone17,4|") } && before.sources.contains { $0.hasPrefix("iPhone17,4|") })
        #expect(try await store.pruneIdleKeys(lastSeenBefore: 130 * Self.day, limit: 100).map(\.model) == ["iPhone17,4"])
        live.remove([screenKey("iPhone17,4")])
        let rows = try screenRows(subject)
        #expect(!rows.counts.contains { $0.hasPrefix("iPhone17,4|") } && !rows.sources.contains { $0.hasPrefix("iPhone17,4|") },
                "\(kind)")

        var loaded = HeightIndex()
        loaded.apply(try await subject.open().loadIndexCounts())

        // Past retention every network's hash on a screen is retired; each (key, screen) keeps its count.
        _ = try await store.retireSources(seenBefore: 1_000 * Self.day)
        let perScreen = Dictionary(grouping: rows.sources) { $0.split(separator: "|").prefix(2).joined(separator: "|") }
        #expect(try lines("""
            SELECT model || '|' || screen || '|' || COUNT(*) || '|' || SUM(CASE WHEN source > 0 THEN 1 ELSE 0 END)
            FROM screen_sources GROUP BY model, screen
            """, subject) == perScreen.map { "\($0.key)|\($0.value.count)|0" }.sorted(), "\(kind)")
        return ScreenOutcome(counts: rows.counts, sources: rows.sources, live: screens(in: live), loaded: screens(in: loaded))
    }

    @Test func screenVariantsAreStoredBoundedLoadedAndDeletedAlikeInBothStores() async throws {
        var outcomes: [StoreKind: ScreenOutcome] = [:]
        for kind in StoreKind.available {
            let outcome = try await Self.runScreenScenario(kind)
            outcomes[kind] = outcome
            #expect(outcome.loaded == outcome.live, "\(kind): a reopened store loads the screens the commits gave the index")
            #expect(outcome.screens(of: "iPhone17,1") == ["304x604", "305x605", "320x693", "393x852"],
                    "\(kind): the supported screens and the strongest sprayed ones, \(HeightIndex.maxScreensPerKey) in all")
            #expect(Set(outcome.counts.filter { $0.hasPrefix("iPhone17,1|") }.map { String($0.split(separator: "|")[1]) })
                    == ["304x604", "305x605", "320x693", "393x852"], "\(kind): the store keeps the index's screens")
            #expect(Set(outcome.sources.filter { $0.hasPrefix("iPhone17,1|") }.map { String($0.split(separator: "|")[1]) })
                    == ["304x604", "305x605", "320x693", "393x852"], "\(kind)")
            #expect(outcome.sources.filter { $0.hasPrefix("iPhone17,2|393x852|") }.count == 8, "\(kind): 8 sources a (key, screen)")
            let standard = outcome.live["iPhone17,2"]?.last
            #expect(standard?.screen == ScreenSize("393x852") && standard?.stats.samples == 194 && standard?.stats.support.sources == 8,
                    "\(kind): \(String(describing: standard))")
            #expect(outcome.screens(of: "iPhone17,3") == ["320x693", "393x852"])
            #expect(outcome.live["iPhone17,3"]?.map(\.stats.samples) == [90, 180])
            #expect(outcome.live["iPhone17,4"] == [] && outcome.loaded["iPhone17,4"] == [], "\(kind): the deleted key has no screens")
        }
        if let sqlite = outcomes[.sqlite], let postgres = outcomes[.postgresql] {
            #expect(sqlite.counts == postgres.counts)
            #expect(sqlite.sources == postgres.sources)
            #expect(sqlite.live == postgres.live)
            #expect(sqlite.loaded == postgres.loaded)
        }
    }
}

extension TestPostgres {
    /// A throwaway cluster whose `kbtd` database is as a kbtd of schema `version` leaves it, empty.
    static func atSchemaVersion(_ version: Int) throws -> TestPostgres {
        let postgres = try TestPostgres()
        for sql in PostgresSchema.bookkeeping { try postgres.psql("kbtd", sql, user: "kbtd") }
        for migration in PostgresSchema.migrations where migration.version <= version {
            for sql in migration.sql { try postgres.psql("kbtd", sql, user: "kbtd") }
            try postgres.psql("kbtd", "INSERT INTO schema_migrations VALUES (\(migration.version), "
                              + "'\(migration.name.replacingOccurrences(of: "'", with: "''"))', 0)", user: "kbtd")
        }
        return postgres
    }
}

@Suite("Screen variants in the PostgreSQL store (schema v13)", .ownThreads)
struct PostgresScreenTests {
    /// The database exactly as a kbtd of schema v12 leaves it, holding one trusted key: it
    /// migrates to v13 losing nothing, and takes screens from then on.
    @Test(.enabled(if: TestPostgres.available))
    func aVersion12PostgresDatabaseMigratesToScreenVariantsLosingNothing() async throws {
        let postgres = try TestPostgres.atSchemaVersion(12)
        try postgres.psql("kbtd", ReleasePostgresMigrationTests.version8Rows + """
            INSERT INTO release_counts VALUES ('iPhone17,1', 26, 1, 'ja-JP', 'portrait', 'default', 380.0, 1500, 1500);
            INSERT INTO release_sources VALUES ('iPhone17,1', 26, 1, 'ja-JP', 'portrait', 'default', 0, NULL);
            INSERT INTO day_votes VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 0, 380.0, 1500);
            INSERT INTO day_sources VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 0, 0);
            """, user: "kbtd")
        #expect(try postgres.psql("kbtd", "SELECT to_regclass('screen_counts') IS NULL") == "t")
        let database = PostgresDatabase(url: try PostgresURL(postgres.url), logger: Logger(label: "kbtd-test"))
        defer { database.close() }
        let store = try await PostgresTelemetryStore(database: database, admission: { IndexAdmission() })
        #expect(try postgres.psql("kbtd", "SELECT MAX(version) FROM schema_migrations") == "13")
        #expect(try postgres.psql("kbtd", "SELECT name FROM schema_migrations WHERE version = 13")
                == "screen variants: docked samples, votes and sources per reported screen")
        let key = SeriesKey(model: "iPhone17,1", osMajor: 26, language: "ja-JP", orientation: .portrait, keyboardType: "default")
        let counts = try await store.loadCounts()
        #expect(counts.heights[HeightCountKey(series: key, placement: .docked, halfPoints: HeightBin.halfPoints(380))] == 1_500)
        #expect(counts.releases.values.map(\.samples).reduce(0, +) == 1_500)
        #expect(counts.releaseSources == [ReleaseKey(series: key, minor: 1): [.trusted]])
        #expect(counts.dayVotes.values.reduce(0, +) == 1_500 && counts.daySources.count == 1)
        #expect(counts.screenCounts.isEmpty && counts.screenSources.isEmpty, "counts from before v13 have no screen")

        var batch = releaseBatch("n", os: "26.1", height: 380, count: 40, receivedAt: 2_000)
        batch.delta.recordScreen(ScreenSize("320x693"))
        let result = try await store.commit([batch])
        let zoomed = ScreenVariantKey(series: key, screen: ScreenSize("320x693")!)
        #expect(result.added.screenSources == [zoomed: [.trusted]])
        #expect(result.added.screenCounts == [ScreenBin(series: key, screen: zoomed.screen, halfPoints: HeightBin.halfPoints(380)):
                                                ReleaseCount(samples: 40, votes: 40)])
        let after = try await store.loadIndexCounts()
        #expect(after.screenCounts == result.added.screenCounts && after.screenSources == result.added.screenSources)
        #expect(after.heights.values.reduce(0, +) == 1_540)
    }

    /// Other PostgreSQL nodes count a commit's screens from the commit log, as the committing node does.
    @Test func theCommitLogCarriesScreenCountsAndSources() {
        var delta = AggregateDelta()
        for (network, screen) in [(1, "393x852"), (2, "320x693"), (3, "393x852")] {
            delta.merge(networkScreenBatch("\(network)", screen: screen, network: network, model: "iPhone17,1", height: 380 - Double(network),
                                           count: 10 * network, receivedAt: 1_000).delta)
        }
        delta.screenSources[ScreenVariantKey(series: StoreConformanceTests.screenKey("iPhone17,1"), screen: ScreenSize("320x693")!),
                            default: []].insert(.trusted)
        #expect(delta.screenCounts.count == 3 && delta.screenSources.count == 2)
        #expect(delta.screenSources.values.map(\.count).sorted() == [2, 2])
        let decoded = DeltaCoding.decode(DeltaCoding.encode(delta))
        #expect(decoded == delta)
        #expect(decoded.screenCounts == delta.screenCounts && decoded.screenSources == delta.screenSources)
    }
}
