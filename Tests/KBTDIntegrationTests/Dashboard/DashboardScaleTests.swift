import Foundation
import KBTDCore
import KBTDReport
import KBTDStore
import Testing

/// The dashboard's bounded read: the stores' aggregating queries give what the
/// counts in memory give, and at 500,000 keys the page and `kbtd report`
/// are drawn in bounded memory.
@Suite("Dashboard at scale: bounded reads", .ownThreads, .timeLimit(.minutes(10)), .serialized)
struct DashboardScaleTests {
    /// Keys of varied shape, with ties on purpose: 8 models (one with 30 languages, more panels than
    /// drawn), two OS majors, floating frames, keys with one kind of cold start only, 12 durations and
    /// 10 curves (more than drawn), and 520 models with one sample each (more filter choices than listed).
    static func counts() -> AggregateDelta {
        var delta = AggregateDelta()
        var random = SplitMix64(seed: 22)
        let languages = (0..<30).map { "l\($0 < 10 ? "0" : "")\($0)-XX" }
        for m in 0..<8 {
            let model = "iPhone\(10 + m),\(m % 3 + 1)"
            for os in [25, 26] where m % 2 == 0 || os == 26 {
                for language in (m == 0 ? languages : Array(languages.prefix(3))) {
                    for orientation in Orientation.allCases {
                        for type in ["default", "emoji"] where type == "default" || language.hasPrefix("l0") {
                            let key = SeriesKey(model: model, osMajor: os, language: language, orientation: orientation, keyboardType: type)
                            let base = orientation == .portrait ? 640 : 400
                            for _ in 0..<Int(1 + random.next() % 3) {
                                delta.heights[HeightCountKey(series: key, placement: .docked, halfPoints: base + Int(random.next() % 6)),
                                              default: 0] += Int64(1 + random.next() % 12)
                            }
                            if random.next() % 4 == 0 {
                                delta.heights[HeightCountKey(series: key, placement: .floating, halfPoints: 240)] = 3
                            }
                            for _ in 0..<2 {
                                let bin = AnimationBin(durationMs: 200 + 10 * Int(random.next() % 12), curve: Int(random.next() % 10))
                                delta.animations[AnimationCountKey(series: key, event: .show, bin: bin), default: 0] += Int64(1 + random.next() % 4)
                            }
                            let kinds = random.next() % 3
                            for preloaded in [false, true] where kinds == 2 || (kinds == 1) == preloaded {
                                delta.coldStarts[ColdStartCountKey(series: key, preloaded: preloaded,
                                                                   bucket: LogBucket.index(preloaded ? 40 : 500) + Int(random.next() % 20)),
                                                 default: 0] += Int64(1 + random.next() % 3)
                            }
                        }
                    }
                }
            }
        }
        for m in 0..<520 {
            let key = SeriesKey(model: "iPad\(m),1", osMajor: 18, language: "en-US", orientation: .portrait, keyboardType: "default")
            delta.animations[AnimationCountKey(series: key, event: .show, bin: AnimationBin(durationMs: 250, curve: 7))] = 1
        }
        return delta
    }

    @Test(arguments: StoreKind.available)
    func theStoresAggregateWhatTheCountsInMemoryGive(kind: StoreKind) async throws {
        let subject = try StoreUnderTest(kind)
        let store = try await subject.open()
        let counts = Self.counts()
        _ = try await store.commit([PendingBatch(batchID: "seed", receivedAt: 1_000, model: "iPhone10,1", os: "26.1", accepted: 1, rejected: 0,
                                           delta: counts)])
        let stored = try await store.loadCounts()
        #expect(stored.heights == counts.heights && stored.animations == counts.animations && stored.coldStarts == counts.coldStarts)
        let filters = [
            DashboardFilter(), DashboardFilter(model: "iPhone10,1"), DashboardFilter(model: "iPhone10,1", osMajor: 26),
            DashboardFilter(osMajor: 25), DashboardFilter(language: "l01-XX"), DashboardFilter(model: "iPhone13,2", language: "l02-XX"),
            DashboardFilter(model: "iPhone99,9"), DashboardFilter(model: "iPad3,1"),
        ]
        for filter in filters {
            for minSamples: Int64 in [1, 20] {
                let expected = DashboardData(counts: stored, filter: filter, minSamples: minSamples)
                let data = try await store.dashboardData(filter, minSamples: minSamples)
                #expect(data == expected, "\(kind) \(filter) min_samples \(minSamples)")
            }
        }
        // The limits apply: the choices, panels and rows are cut, and say how many were left out.
        let all = try await store.dashboardData(DashboardFilter(), minSamples: 20)
        #expect(all.models.count == DashboardData.maxChoices && all.hiddenModels == 528 - DashboardData.maxChoices)
        let model = try await store.dashboardData(DashboardFilter(model: "iPhone10,1"), minSamples: 20)
        #expect(model.panels.count == DashboardData.maxPanels && model.hiddenPanels == 60 - DashboardData.maxPanels)
        #expect(model.durations.count == DashboardData.maxAnimationRows && model.thinKeys.count == DashboardData.maxThinKeys)
        #expect(model.coldStartRows.count == DashboardData.maxColdStartRows)
    }

    @Test func aListCutToItsLimitStillOffersTheChosenValue() {
        var data = DashboardData()
        data.models = ["iPhone10,1"]
        data.hiddenModels = 7
        let html = DashboardPage.render(DashboardInput(
            data: data, hourly: [], answersByBasis: nil, filter: DashboardFilter(model: "iPad3,1"), minSamples: 20,
            generatedAt: 1_763_720_000, live: true, estimate: { HeightEstimator().estimate($0, in: HeightIndex()) }))
        #expect(html.contains("<option value=\"iPad3,1\" selected>iPad3,1</option><option value=\"iPhone10,1\">"))
        #expect(html.contains("<option value=\"\" disabled>7 more with fewer samples: ?model= in the URL</option>"))
    }

    // MARK: 500,000 keys

    static let keyCount = 500_000

    /// A database of `keyCount` keys written straight into SQLite (seconds, not minutes of ingest):
    /// 1,000 models x 500 languages, one row per key in every count table, one source each, and one
    /// key in ten admitted to the index (50,000: `max_indexed_keys`, as a flood leaves it), all first
    /// seen now (a daemon prunes keys left unconfirmed for a day: these stay while the test runs).
    static func seed(_ path: String) throws {
        _ = try SQLiteTelemetryStore(path: path)  // creates and migrates
        let keyColumns = "model, os_major, language, orientation, keyboard_type"
        let status = try sqlite3(path, """
            BEGIN;
            CREATE TEMP TABLE k AS
                WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < \(keyCount))
                SELECT i, printf('iPhone%d,%d', 20 + i % 250, 1 + i / 250 % 4) AS model, 26 AS os_major,
                    printf('x%03d-ZZ', i / 1000) AS language, 'portrait' AS orientation, 'default' AS keyboard_type,
                    1 + i % 5 AS n FROM n ORDER BY model, language;
            INSERT INTO keys(\(keyColumns), first_seen, admitted_at, last_seen)
                SELECT \(keyColumns), unixepoch(), CASE WHEN i % 10 = 0 THEN unixepoch() END, unixepoch() FROM k;
            INSERT INTO height_counts SELECT \(keyColumns), 'docked', 300.0 + (i % 40) * 0.5, n FROM k;
            INSERT INTO height_votes SELECT \(keyColumns), 300.0 + (i % 40) * 0.5, n FROM k;
            INSERT INTO animation_counts SELECT \(keyColumns), 'show', 250, 7, n FROM k;
            INSERT INTO cold_start_counts SELECT \(keyColumns), i % 2, 300 + i % 50, 500.0, n FROM k;
            INSERT INTO safe_area_counts SELECT \(keyColumns), 34.0, n FROM k;
            INSERT INTO key_sources(\(keyColumns), source, seen_at) SELECT \(keyColumns), i + 1, unixepoch() FROM k;
            COMMIT;
            """)
        #expect(status == 0)
    }

    /// Before the bounded read, `kbtd report --html` read every count: 953 MiB here at 500k keys
    /// (688 MiB on another database of that size), and one `GET /dashboard` raised the daemon's peak by 792 MiB.
    /// Now: the store's summary plus the index's 50,000 admitted keys (about 147 MiB, as the daemon's index).
    @Test func reportAndDashboardAt500kKeysStayInBoundedMemory() async throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("kbtd.sqlite").path
        try Self.seed(path)
        let keys = try SQLiteTelemetryStore(path: path, access: .readOnly).statsTotals(StatsFilter()).keys
        #expect(keys == Int64(Self.keyCount))

        let html = directory.appendingPathComponent("report.html").path
        for filter in [[], ["--model", "iPhone20,1"]] {
            let report = try SpawnedProcess(TestPaths.kbtdBinary, ["report", "--html", html, "--database", path] + filter,
                                            stderr: directory.appendingPathComponent("stderr").path)
            let (code, peak) = report.waitForPeakMemory(seconds: 600)
            #expect(code == 0, "\(filter): \((try? String(contentsOfFile: directory.appendingPathComponent("stderr").path, encoding: .utf8)) ?? "")")
            #expect(peak < 200, "kbtd report \(filter) peaked at \(Int(peak)) MiB")
            let page = try String(contentsOfFile: html, encoding: .utf8)
            #expect(page.contains("500,000 keys") || !filter.isEmpty)
            #expect(htmlTags(page, "<tr class=\"thin-key\"").count == DashboardData.maxThinKeys)
            #expect(page.utf8.count < 1_000_000)
        }

        // The daemon: one GET /dashboard adds little to its peak (it read every count before: +792 MiB).
        let daemon = try TestDaemon(database: path).start()
        let before = daemon.memory().peak
        let page = try daemon.get("/dashboard")
        #expect(page.status == 200 && page.text.contains("500,000 keys"))
        #expect(htmlTags(page.text, "<svg class=\"histogram\"").count == DashboardData.maxPanels)
        let after = daemon.memory().peak
        #expect(after - before < 100, "GET /dashboard: peak \(Int(before)) -> \(Int(after)) MiB")
        #expect(daemon.stop() == 0)
    }
}
