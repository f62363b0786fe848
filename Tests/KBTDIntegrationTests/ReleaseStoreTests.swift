import Foundation
import KBTDCore
@testable import KBTDStore
@testable import KBTDPostgres
@testable import KBTDServer
import KeyboardTelemetryClient
import Logging
import Testing

/// A trusted batch from one device on `os`, with its release recorded as ingest records it.
func releaseBatch(_ id: String, os: String, model: String = "iPhone17,1", language: String = "ja-JP",
                  height: Double, count: Int, receivedAt: Int64 = 1_000) -> PendingBatch {
    let delta = ReleaseFleet.batch(model: model, os: os, language: language, height: height, count: count)
    return PendingBatch(batchID: id, receivedAt: receivedAt, model: model, os: os, accepted: count, rejected: 0, delta: delta)
}

@Suite("Point releases in the stores (schema v9)", .ownThreads, .serialized)
struct ReleaseStoreTests {
    @Test(arguments: StoreKind.available)
    func releaseCountsSurviveReopeningAndLeaveWithTheirKey(kind: StoreKind) async throws {
        let subject = try StoreUnderTest(kind)
        var expected = AggregateDelta()
        do {
            let store = try await subject.open()
            let batches = [
                releaseBatch("a", os: "26.1", height: 380, count: 40),
                releaseBatch("b", os: "26.2", height: 384, count: 30),
                releaseBatch("c", os: "26.2.1", height: 384, count: 5),
                releaseBatch("d", os: "26.1", language: "en-US", height: 336, count: 25),
            ]
            #expect(try await store.commit(batches).stored == [true, true, true, true])
            // A duplicate adds nothing, to releases either.
            #expect(try await store.commit([releaseBatch("b", os: "26.2", height: 384, count: 30)]).stored == [false])
            for batch in batches { expected.merge(batch.delta) }
        }
        let key = SeriesKey(model: "iPhone17,1", osMajor: 26, language: "ja-JP", orientation: .portrait, keyboardType: "default")
        #expect(expected.releases[ReleaseBin(series: key, minor: 2, halfPoints: HeightBin.halfPoints(384))]
                == ReleaseCount(samples: 35, votes: 35))
        let reopened = try await subject.open()
        #expect(try await reopened.loadCounts() == expected)
        let indexed = try await reopened.loadIndexCounts()
        #expect(indexed.releases == expected.releases)
        var index = HeightIndex()
        index.apply(indexed)
        #expect(index.releases(of: key).map(\.minor) == [1, 2])
        #expect(index.releases(of: key).map(\.stats.samples) == [40, 35])
    }

    @Test func aVersion8DatabaseMigratesToReleasesLosingNothing() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("v8.sqlite").path
        do {
            let db = try SQLiteConnection(path: path, mode: .readWrite)
            try db.execute("PRAGMA journal_mode = WAL;")
            try db.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL);")
            for migration in Schema.migrations where migration.version <= 8 {
                try db.execute(migration.sql)
                try db.execute("INSERT INTO schema_migrations VALUES (\(migration.version), '\(migration.name.replacingOccurrences(of: "'", with: "''"))', 0);")
            }
            try db.execute("""
                INSERT INTO height_counts VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 'docked', 380.0, 1500);
                INSERT INTO height_votes VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 380.0, 1500);
                INSERT INTO key_sources VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 0, NULL);
                INSERT INTO animation_counts VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 'show', 250, 7, 1500);
                INSERT INTO keys VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 1000, 1000, 1000);
                """)
        }
        let before = try SQLiteTelemetryStore(path: path, access: .readOnly).loadCounts()
        #expect(before.heights.values.reduce(0, +) == 1_500 && before.releases.isEmpty)
        let store = try SQLiteTelemetryStore(path: path)
        #expect(try store.loadCounts() == before)
        #expect(try store.loadIndexCounts() == before)
        var versions: [Int] = []
        try SQLiteConnection(path: path, mode: .readOnly).prepare("SELECT version FROM schema_migrations ORDER BY version")
            .forEachRow { versions.append(Int($0.int(0))) }
        #expect(versions == Array(1...Schema.latestVersion))
        // The old counts answer 26.1 and 26.2 phones alike until a release shows it moved.
        _ = try store.commit([releaseBatch("n", os: "26.2", height: 384, count: 300, receivedAt: 2_000)])
        let after = try store.loadCounts()
        #expect(after.heights.values.reduce(0, +) == 1_800 && after.releases.values.map(\.samples).reduce(0, +) == 300)
        #expect(try store.integrityCheck() == "ok")
    }
}

/// A batch from client network `network` (its keys attributed to it, as ingest attributes them).
func networkReleaseBatch(_ id: String, os: String, network: Int, model: String = "iPhone17,1", height: Double = 384,
                         count: Int = 30, receivedAt: Int64 = 1_000) -> PendingBatch {
    var batch = releaseBatch(id, os: os, model: model, height: height, count: count, receivedAt: receivedAt)
    batch.source = networkSource(network)
    var delta = ReleaseFleet.batch(model: model, os: os, language: "ja-JP", height: height, count: count)
    delta.releaseSources = [:]
    for key in delta.sources.keys { delta.sources[key] = [batch.source] }
    delta.recordRelease(os: os)
    batch.delta = delta
    return batch
}

func networkSource(_ network: Int) -> SourceID { SourceID(network: "198.51.100.\(network)", key: SourceKey(k0: 3, k1: 5)) }

@Suite("Release sources in the stores (schema v11)", .ownThreads, .serialized)
struct ReleaseSourceStoreTests {
    static let key = SeriesKey(model: "iPhone17,1", osMajor: 26, language: "ja-JP", orientation: .portrait, keyboardType: "default")
    static let release2 = ReleaseKey(series: key, minor: 2)

    /// Each (key, release, source) is stored once and reaches the index once: a commit's index
    /// delta carries only the release sources it stored for the first time, a reopened store
    /// hands back every one, and both build the same support. Retiring the networks' hashes
    /// keeps each release's count.
    @Test(arguments: StoreKind.available)
    func releaseSourcesAreStoredOnceAndCountedOnceAcrossCommitsAndReopening(kind: StoreKind) async throws {
        let subject = try StoreUnderTest(kind)
        var live = HeightIndex()
        do {
            let store = try await subject.open()
            // A trusted peer's 26.1 data admits the key (and is 26.1's support).
            let first = try await store.commit([releaseBatch("t", os: "26.1", height: 380, count: 200)])
            live.apply(first.added)
            let one = try await store.commit([networkReleaseBatch("a", os: "26.2", network: 1),
                                              networkReleaseBatch("b", os: "26.2.1", network: 1)])
            #expect(one.added.releaseSources == [Self.release2: [networkSource(1)]])
            live.apply(one.added)
            // Network 1 again: nothing new; network 2: new.
            let two = try await store.commit([networkReleaseBatch("c", os: "26.2", network: 1, receivedAt: 2_000),
                                              networkReleaseBatch("d", os: "26.2", network: 2, receivedAt: 2_000)])
            #expect(two.added.releaseSources == [Self.release2: [networkSource(2)]])
            live.apply(two.added)
            let three = try await store.commit([networkReleaseBatch("e", os: "26.2", network: 2, receivedAt: 3_000)])
            #expect(three.added.releaseSources.isEmpty)
            live.apply(three.added)
        }
        let supports = { (index: HeightIndex) in index.releases(of: Self.key).map { [$0.minor: $0.stats.support] } }
        #expect(supports(live) == [[1: ReleaseSupport(sources: 1, trusted: true)], [2: ReleaseSupport(sources: 2, trusted: false)]])
        let reopened = try await subject.open()
        let counts = try await reopened.loadIndexCounts()
        #expect(counts.releaseSources == [ReleaseKey(series: Self.key, minor: 1): [.trusted],
                                          Self.release2: [networkSource(1), networkSource(2)]])
        var loaded = HeightIndex()
        loaded.apply(counts)
        #expect(supports(loaded) == supports(live))
        #expect(try await reopened.loadCounts().releaseSources == counts.releaseSources)

        // A release's hash retires with its key's row: network 1, reporting the key again (on 26.1)
        // long after, keeps its 26.2 row; network 2, silent since, loses it (the count stays).
        _ = try await reopened.commit([networkReleaseBatch("f", os: "26.1", network: 1, receivedAt: 500_000)])
        _ = try await reopened.retireSources(seenBefore: 400_000)
        let partly = try await subject.open().loadIndexCounts().releaseSources
        #expect(partly[Self.release2]?.contains(networkSource(1)) == true && partly[Self.release2]?.count == 2)
        #expect(partly[Self.release2]?.contains(networkSource(2)) == false)
        // Past retention every network hash is retired, in release_sources as in key_sources: counts stay.
        _ = try await reopened.retireSources(seenBefore: 1_000_000)
        let retired = try await subject.open().loadIndexCounts().releaseSources
        #expect(retired[Self.release2]?.count == 2 && retired[Self.release2]?.allSatisfy { !$0.isNetworkHash && $0 != .trusted } == true)
        #expect(retired[ReleaseKey(series: Self.key, minor: 1)]?.count == 2)
        #expect(retired[ReleaseKey(series: Self.key, minor: 1)]?.contains(.trusted) == true)
    }

    /// Other PostgreSQL nodes count a release's new sources from the commit log, as the committing node does.
    @Test func theCommitLogCarriesReleaseSources() {
        var delta = AggregateDelta()
        for (i, os) in ["26.1", "26.2", "26.2.1", "26.2"].enumerated() { delta.merge(networkReleaseBatch("\(i)", os: os, network: i).delta) }
        delta.releaseSources[ReleaseKey(series: Self.key, minor: 1), default: []].insert(.trusted)
        #expect(delta.releaseSources[Self.release2]?.count == 3)
        #expect(DeltaCoding.decode(DeltaCoding.encode(delta)) == delta)
    }

    /// The schema v10 database: release rows and the key's sources, no `release_sources`. Migration 11
    /// gives each release its key's sources (what it was served on), so no answer changes.
    static let version10Rows = """
        INSERT INTO height_counts VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 'docked', 384.0, 1800);
        INSERT INTO height_votes VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 384.0, 1800);
        INSERT INTO key_sources VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 0, NULL);
        INSERT INTO key_sources VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 77, 1000);
        INSERT INTO key_sources VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', -9, NULL);
        INSERT INTO key_sources VALUES ('iPhone17,1', 26, 'en-US', 'portrait', 'default', 78, 1000);
        INSERT INTO animation_counts VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 'show', 250, 7, 1800);
        INSERT INTO keys VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 1000, 1000, 1000);
        INSERT INTO release_counts VALUES ('iPhone17,1', 26, 1, 'ja-JP', 'portrait', 'default', 380.0, 1500, 1500);
        INSERT INTO release_counts VALUES ('iPhone17,1', 26, 2, 'ja-JP', 'portrait', 'default', 384.0, 300, 300);
        INSERT INTO release_counts VALUES ('iPhone17,1', 26, 2, 'ja-JP', 'portrait', 'default', 380.0, 1, 1);
        """

    static func expectInherited(_ counts: AggregateDelta) {
        let inherited: Set<SourceID> = [.trusted, SourceID(77), SourceID(UInt64(bitPattern: -9))]
        #expect(counts.releaseSources == [ReleaseKey(series: key, minor: 1): inherited, release2: inherited])
        #expect(counts.releases.count == 3 && counts.releases.values.map(\.samples).reduce(0, +) == 1_801)
        #expect(counts.sources[key] == inherited)
    }

    @Test func aVersion10DatabaseGivesEachReleaseItsKeysSources() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("v10.sqlite").path
        do {
            let db = try SQLiteConnection(path: path, mode: .readWrite)
            try db.execute("PRAGMA journal_mode = WAL;")
            try db.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL);")
            for migration in Schema.migrations where migration.version <= 10 {
                try db.execute(migration.sql)
                try db.execute("INSERT INTO schema_migrations VALUES (\(migration.version), '\(migration.name.replacingOccurrences(of: "'", with: "''"))', 0);")
            }
            try db.execute(Self.version10Rows)
        }
        let before = try SQLiteTelemetryStore(path: path, access: .readOnly).loadCounts()
        #expect(before.releaseSources.isEmpty && before.releases.count == 3, "read-only: not migrated")
        let store = try SQLiteTelemetryStore(path: path)
        let after = try store.loadCounts()
        Self.expectInherited(after)
        var withoutReleaseSources = after
        withoutReleaseSources.releaseSources = [:]
        #expect(withoutReleaseSources == before, "nothing else changed")
        Self.expectInherited(try store.loadIndexCounts())
        #expect(try store.integrityCheck() == "ok")
    }

    @Test(.enabled(if: TestPostgres.available))
    func aVersion10PostgresDatabaseGivesEachReleaseItsKeysSources() async throws {
        let postgres = try TestPostgres.atSchemaVersion(10)
        try postgres.psql("kbtd", Self.version10Rows, user: "kbtd")
        let database = PostgresDatabase(url: try PostgresURL(postgres.url), logger: Logger(label: "kbtd-test"))
        defer { database.close() }
        let store = try await PostgresTelemetryStore(database: database, admission: { IndexAdmission() })
        #expect(try postgres.psql("kbtd", "SELECT MAX(version) FROM schema_migrations") == "\(PostgresSchema.latestVersion)")
        Self.expectInherited(try await store.loadCounts())
        Self.expectInherited(try await store.loadIndexCounts())
    }
}

@Suite("Point releases through the daemon's routes", .ownThreads)
struct ReleaseRouteTests {
    /// The point-release scenario (`ReleaseFleet`) over HTTP: 26.1 history, then 26.2 moves ja-JP by 4 pt on every model.
    /// Ingest records each batch's release, `/v1/height?os=26.2` serves the new height, `os=26.1` the
    /// old one, and a restart (the index rebuilt from the store) answers the same.
    @Test func aMovedReleaseIsServedByTheRouteAndAfterARestart() async throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = directory.appendingPathComponent("kbtd.sqlite").path
        let models = Array(ReleaseFleet.models.prefix(3))
        func height(_ app: InProcessApp, _ model: String, _ os: String, _ language: String = "ja-JP") async throws -> (Double?, String?) {
            let response = try await app.get("/v1/height?model=\(model)&language=\(language)&os=\(os)")
            let body = try JSONParser.parse(response.body)
            return (body["height"]?.double, body["basis"].flatMap { if case .string(let s) = $0 { return s } else { return nil } })
        }
        func expectAnswers(_ app: InProcessApp) async throws {
            for model in models {
                let old = ReleaseFleet.base(model) + ReleaseFleet.candidateBar
                let (new, basis) = try await height(app, model, "26.2")
                #expect(new == old + 4 && basis == "model+os+language", "\(model) on 26.2")
                #expect(try await height(app, model, "26.1").0 == old, "\(model) on 26.1")
                #expect(try await height(app, model, "26.2", "en-US").0 == ReleaseFleet.base(model), "\(model) en-US on 26.2")
                // `/v1/heights` (what the client library refreshes) answers per release too.
                for (os, expected) in [("26.2", old + 4), ("26.2.1", old + 4), ("26.1", old), ("26", old)] {
                    let response = try await app.get("/v1/heights?model=\(model)&os=\(os)")
                    let body = try JSONParser.parse(response.body)
                    #expect(body["os"] == .string(os))
                    let japanese = body["estimates"]?.array?.first { $0["language"] == .string("ja-JP") }
                    #expect(japanese?["height"]?.double == expected && japanese?["basis"] == .string("model+os+language"),
                            "\(model) /v1/heights on \(os): \(String(describing: japanese))")
                    let english = body["estimates"]?.array?.first { $0["language"] == .string("en-US") }
                    #expect(english?["height"]?.double == ReleaseFleet.base(model), "\(model) en-US /v1/heights on \(os)")
                }
            }
        }
        do {
            let app = try InProcessApp(database: database)
            try await postReleaseShift(to: app, models: models)
            try await expectAnswers(app)
            await app.app.shutdown()
        }
        let again = try await InProcessApp.reopened(database: database)
        try await expectAnswers(again)
    }
}

@Suite("Release decisions made ahead of the questions", .ownThreads)
struct ReleaseDecisionSettlerTests {
    /// The daemon's settler makes the release decisions after ingest, before anyone asks: the
    /// questions that follow read them and compute no model's difference themselves.
    @Test func theDaemonMakesReleaseDecisionsBeforeAnyQuestion() async throws {
        let app = try InProcessApp()
        let models = Array(ReleaseFleet.models.prefix(3))
        try await postReleaseShift(to: app, models: models)
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(20)
        while app.app.heights.releaseDecisionWork.differences == 0, clock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        try await Task.sleep(for: .milliseconds(200))
        let settled = app.app.heights.releaseDecisionWork
        #expect(settled.differences > 0, "the settler made the decisions with no question asked")
        for model in ReleaseFleet.models.prefix(3) {
            for language in ["ja-JP", "en-US"] {
                for os in ["26", "26.1", "26.2", "26.2.1"] {
                    #expect(try await app.get("/v1/height?model=\(model)&language=\(language)&os=\(os)").status == 200)
                }
            }
            #expect(try await app.get("/v1/heights?model=\(model)&os=26.2").status == 200)
        }
        #expect(app.app.heights.releaseDecisionWork.differences == settled.differences, "no answer computed a decision")
        #expect(app.app.heights.releaseDecisionWork.unfinished == settled.unfinished)

        // A commit of one model's ja-JP on 26.2 makes two decisions stale (ja-JP on 26.1 and on
        // 26.2): the settler refreshes those, that model's difference in each, and looks up no
        // other keyboard's (en-US's two), with no question asked.
        let samples = shows(5, height: ReleaseFleet.base(models[0]) + ReleaseFleet.candidateBar + 4, language: "ja-JP")
        #expect(try await app.post(gzip(batchBody(model: models[0], os: "26.2", samples: samples)), encoding: "gzip").status == 202)
        let refreshDeadline = clock.now + .seconds(20)
        while app.app.heights.releaseDecisionWork.lookups < 2, clock.now < refreshDeadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        try await Task.sleep(for: .milliseconds(200))
        let refreshed = app.app.heights.releaseDecisionWork
        #expect(refreshed.lookups == 2, "the stale decisions only, not every keyboard on every release")
        #expect(refreshed.differences == 2)
        await app.app.shutdown()
    }
}

@Suite("Point releases in the exported table and the client library", .ownThreads)
struct ReleaseExportTests {
    /// `kbtd export` carries the answers per OS major and per release where they differ, and a
    /// client with no network takes the one for its release (`device.os`): 26.2 and later phones
    /// the moved height, 26.1 phones theirs, phones of another major the table's any-OS answer.
    @Test func theExportCarriesReleaseAnswersAndTheClientPicksItsOwn() async throws {
        let app = try InProcessApp()
        let models = Array(ReleaseFleet.models.prefix(3))
        try await postReleaseShift(to: app, models: models)
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("kbtd-heights.json")
        let document = try app.export(to: file)
        let model = models[0]
        let old = ReleaseFleet.base(model) + ReleaseFleet.candidateBar
        let releases = try #require(document["models"]?[model]?["os"], "\(document)")
        // Without an OS, 1,500 old votes outvote the new ones: the major (which `os=26` means) answers 26.1's
        // height, and only the moved release differs, for the moved language only.
        #expect(document["models"]?[model]?["heights"]?["ja-JP|portrait|default"]?.double == old)
        #expect(releases["26.2"]?["ja-JP|portrait|default"]?.double == old + 4, "\(releases)")
        #expect(releases["26.2"]?["en-US|portrait|default"] == nil)
        #expect(releases["26.1"] == nil && releases["26.0"] == nil, "\(releases)")
        // What the table says for each release is what `/v1/height` serves it.
        for os in ["26.0", "26.1", "26.2", "26.3"] {
            let served = try JSONParser.parse(try await app.get("/v1/height?model=\(model)&language=ja-JP&os=\(os)").body)
            let bundled = try BundledHeightTable(contentsOf: file).height(model: model, os: os, screen: nil, language: "ja-JP",
                                                                         orientation: .portrait, keyboardType: .default)
            #expect(bundled == served["height"]?.double, "\(os)")
        }

        let table = try BundledHeightTable(contentsOf: file)
        func bundled(_ os: String) async throws -> KeyboardHeightEstimate {
            var configuration = ClientFixtures.configuration(port: unreachablePort(), directory: directory.appendingPathComponent(os))
            configuration.bundledHeights = table
            let client = KeyboardTelemetryClient(device: TelemetryDevice(model: model, os: os), configuration: configuration)
            #expect(await client.refreshHeights(force: true) != .updated)
            let estimate = client.heightEstimate(language: "ja-JP", orientation: .portrait)
            await client.shutdown()
            return estimate
        }
        #expect(try await bundled("26.2") == .init(height: old + 4, source: .bundled))
        #expect(try await bundled("26.3.1") == .init(height: old + 4, source: .bundled), "a later release keeps the move")
        #expect(try await bundled("26.1") == .init(height: old, source: .bundled))
        #expect(try await bundled("27.0") == .init(height: old, source: .bundled), "another major: the any-OS answer")

        // A table from before releases (no `os`) still reads, and answers every release alike.
        let before = try BundledHeightTable(data: Data("""
            {"format":"kbtd-height-table","version":1,"defaults":{"portrait":335.0,"landscape":209.0},
             "models":{"\(model)":{"heights":{"ja-JP|portrait|default":\(old)}}},"screens":{}}
            """.utf8))
        for os in ["26.1", "26.2", "27"] {
            #expect(before.height(model: model, os: os, screen: nil, language: "ja-JP", orientation: .portrait, keyboardType: .default) == old)
        }
    }
}

@Suite("Point releases: a PostgreSQL database of schema v8 migrates losing nothing", .ownThreads)
struct ReleasePostgresMigrationTests {
    /// One trusted key with 1,500 docked samples at 380 pt, in the tables of schema v8.
    static let version8Rows = """
        INSERT INTO height_counts VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 'docked', 380.0, 1500);
        INSERT INTO height_votes VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 380.0, 1500);
        INSERT INTO key_sources VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 0, NULL);
        INSERT INTO animation_counts VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 'show', 250, 7, 1500);
        INSERT INTO keys VALUES ('iPhone17,1', 26, 'ja-JP', 'portrait', 'default', 1000, 1000, 1000);
        """

    @Test(.enabled(if: TestPostgres.available))
    func aVersion8PostgresDatabaseMigratesToReleasesLosingNothing() async throws {
        // The database exactly as a kbtd of schema v8 leaves it, holding one trusted key.
        let postgres = try TestPostgres.atSchemaVersion(8)
        try postgres.psql("kbtd", Self.version8Rows, user: "kbtd")
        let database = PostgresDatabase(url: try PostgresURL(postgres.url), logger: Logger(label: "kbtd-test"))
        defer { database.close() }
        let store = try await PostgresTelemetryStore(database: database, admission: { IndexAdmission() })
        #expect(try postgres.psql("kbtd", "SELECT MAX(version) FROM schema_migrations") == "\(PostgresSchema.latestVersion)")
        let counts = try await store.loadCounts()
        let key = SeriesKey(model: "iPhone17,1", osMajor: 26, language: "ja-JP", orientation: .portrait, keyboardType: "default")
        #expect(counts.heights[HeightCountKey(series: key, placement: .docked, halfPoints: HeightBin.halfPoints(380))] == 1_500)
        #expect(counts.votes[SeriesBin(series: key, halfPoints: HeightBin.halfPoints(380))] == 1_500)
        #expect(counts.releases.isEmpty)
        #expect(try await store.loadIndexCounts().heights.values.reduce(0, +) == 1_500)
        _ = try await store.commit([releaseBatch("n", os: "26.2", height: 384, count: 300, receivedAt: 2_000)])
        let after = try await store.loadCounts()
        #expect(after.heights.values.reduce(0, +) == 1_800 && after.releases.values.map(\.samples).reduce(0, +) == 300)
    }
}

/// Posts, for each model, 150 ja-JP samples of its old height on 26.1 and 40 of 4 pt more on 26.2
/// (plus 30 en-US samples of its base height on each): a point release that moved ja-JP.
func postReleaseShift(to app: InProcessApp, models: [String]) async throws {
    for model in models {
        let old = ReleaseFleet.base(model) + ReleaseFleet.candidateBar
        for (os, height, count) in [("26.1", old, 150), ("26.2", old + 4, 40)] {
            let samples = shows(count, height: height, language: "ja-JP") + shows(30, height: ReleaseFleet.base(model))
            let response = try await app.post(gzip(batchBody(model: model, os: os, samples: samples)), encoding: "gzip")
            #expect(response.status == 202, "\(response.text)")
        }
    }
}

@Suite("Release rows in the stores are bounded per key", .ownThreads, .serialized)
struct ReleaseRowBoundTests {
    static func key(_ model: String) -> SeriesKey {
        SeriesKey(model: model, osMajor: 26, language: "ja-JP", orientation: .portrait, keyboardType: "default")
    }

    /// Per model: its releases in `table` and the table's rows, read with the store's own SQL.
    static func rows(in table: String, _ subject: StoreUnderTest) throws -> [String: (releases: Int, rows: Int)] {
        let sql = "SELECT model, COUNT(DISTINCT os_minor), COUNT(*) FROM \(table) GROUP BY model"
        var found: [String: (releases: Int, rows: Int)] = [:]
        switch subject.kind {
        case .sqlite:
            try SQLiteConnection(path: subject.path, mode: .readOnly).prepare(sql).forEachRow { row in
                found[row.text(0)] = (Int(row.int(1)), Int(row.int(2)))
            }
        case .postgresql:
            for line in try subject.postgres!.psql("kbtd", sql).split(separator: "\n") {
                let fields = line.split(separator: "|").map(String.init)
                found[fields[0]] = (Int(fields[1])!, Int(fields[2])!)
            }
        }
        return found
    }

    /// 26.2 moved ja-JP, reported by 3 networks on every model (which confirm the keys); then
    /// one network sprays 1,000 fresh minors on every key. Each key keeps rows for at most
    /// `maxReleasesPerKey` releases, the supported 26.1 and 26.2 among them (the weakest
    /// sprayed ones go), every answer is the unsprayed one, and a restart loads an index
    /// holding the same releases with the same answers.
    @Test(arguments: StoreKind.available)
    func aSprayOfMinorsKeepsAtMostTheBoundOfReleaseRowsPerKey(kind: StoreKind) async throws {
        let subject = try StoreUnderTest(kind)
        let store = try await subject.open()
        var live = HeightIndex()
        var honest = [PendingBatch]()
        for model in ReleaseFleet.models {
            let old = ReleaseFleet.base(model) + ReleaseFleet.candidateBar
            for network in 1...3 {
                honest.append(networkReleaseBatch("\(model)-1-\(network)", os: "26.1", network: network, model: model,
                                                  height: old, count: 200))
                honest.append(networkReleaseBatch("\(model)-2-\(network)", os: "26.2", network: network, model: model,
                                                  height: old + 4, count: 100))
            }
        }
        live.apply(try await store.commit(honest).added)
        let unsprayed = live
        let sprayed = (3..<1_003).flatMap { minor in
            ReleaseFleet.models.map { model in
                networkReleaseBatch("\(model)-\(minor)", os: "26.\(minor)", network: 9, model: model,
                                    height: ReleaseFleet.base(model) + ReleaseFleet.candidateBar + 10, count: 20)
            }
        }
        for start in stride(from: 0, to: sprayed.count, by: 100) {
            live.apply(try await store.commit(Array(sprayed[start..<min(start + 100, sprayed.count)])).added)
        }

        // One bin a release here: a row a release in release_counts; 3 networks on 26.1 and 26.2, 1 on each sprayed one.
        let bound = HeightIndex.maxReleasesPerKey
        let counts = try Self.rows(in: "release_counts", subject), sources = try Self.rows(in: "release_sources", subject)
        for model in ReleaseFleet.models {
            #expect(counts[model]?.releases == bound && counts[model]?.rows == bound, "\(model): \(String(describing: counts[model]))")
            #expect(sources[model]?.releases == bound && sources[model]?.rows == 3 + 3 + bound - 2,
                    "\(model): \(String(describing: sources[model]))")
            let minors = live.releases(of: Self.key(model)).map(\.minor)
            #expect(minors == [1, 2] + Array(1_003 - bound + 2..<1_003), "\(model): \(minors)")
        }
        #expect(live.releaseMinors[26]?.count == bound)

        let reopened = try await subject.open()
        var loaded = HeightIndex()
        loaded.apply(try await reopened.loadIndexCounts())
        let estimator = HeightEstimator()
        for model in ReleaseFleet.models {
            #expect(loaded.releases(of: Self.key(model)).map(\.minor) == live.releases(of: Self.key(model)).map(\.minor))
            #expect(loaded.releases(of: Self.key(model)).map(\.stats) == live.releases(of: Self.key(model)).map(\.stats))
            let old = ReleaseFleet.base(model) + ReleaseFleet.candidateBar
            for os in ["26.1", "26.2", "26.500", "26.1002"] {
                let query = try ReleaseFleet.query(model, "ja-JP", os)
                let answer = estimator.estimate(query, in: live), before = estimator.estimate(query, in: unsprayed)
                if os == "26.1" {
                    // Answered from the OS major without its moved releases: the sprayed samples count for the
                    // major (as every release's do, kept or not), so only the count of samples grows.
                    #expect((answer.height, answer.basis, answer.p10, answer.p90) == (before.height, before.basis, before.p10, before.p90),
                            "\(model) \(os): \(answer)")
                } else {
                    #expect(answer == before, "\(model) \(os): \(answer)")
                }
                #expect(answer.height == (os == "26.1" ? old : old + 4), "\(model) \(os): \(answer)")
                #expect(estimator.estimate(query, in: loaded) == answer, "\(model) \(os) after a restart")
            }
        }
    }
}
