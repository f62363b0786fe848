import Foundation
import KBTDCore
import KBTDStore
import Testing

/// Debian's headless Chromium loads `/dashboard` from a live daemon fed by
/// `kbtd-fleet`; what it drew is checked against the database (sqlite3),
/// `GET /v1/height` and `kbtd stats`.
@Suite("Dashboard in a real browser", .ownThreads, .timeLimit(.minutes(10)))
struct DashboardBrowserTests {
    static let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { FileManager.default.isExecutableFile(atPath: $0) }

    static func run(_ executable: String, _ arguments: [String], timeout: Double = 120) async throws -> CommandResult {
        try await runProgram(executable, arguments, timeout: timeout)
    }

    static func browser(_ profile: URL, _ arguments: [String]) async throws -> CommandResult {
        try await run(chromium!, ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
                                  "--user-data-dir=\(profile.path)", "--enable-logging=stderr", "--v=0"] + arguments)
    }

    static func sqlite(_ database: String, _ sql: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
        process.arguments = ["-readonly", database, sql]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test(.enabled(if: chromium != nil,
                   "Chromium is not installed: `apt-get install chromium` (scripts/dev deps and .ci/run install it)"))
    func whatChromiumDrawsMatchesTheData() async throws {
        let daemon = try TestDaemon().start()
        let fleet = try await FleetRunTests.run(against: daemon, devices: 120, seed: 11)
        #expect(fleet.status == 0, "\(fleet.stderr)")
        let profile = daemon.directory.appendingPathComponent("chromium")
        let base = "http://127.0.0.1:\(daemon.port)"

        // Unfiltered: the histograms are drawn for the model with the most docked samples.
        let dom = try await Self.browser(profile, ["--dump-dom", "\(base)/dashboard"])
        #expect(dom.status == 0, "\(dom.stderr.suffix(2000))")
        #expect(!dom.stderr.contains("Content Security Policy"), "CSP violation: \(dom.stderr.suffix(2000))")
        let html = dom.stdout
        let model = try #require(htmlTags(html, "<section id=\"heights\"").first?["data-model"])
        let busiest = try Self.sqlite(daemon.database, """
            SELECT model FROM height_counts WHERE placement = 'docked' GROUP BY model ORDER BY SUM(count) DESC, model LIMIT 1
            """)
        #expect(model == busiest)

        // Each panel: as many bars as docked bins in the database, each bar's count, and the served estimate.
        let panels = htmlSections(html, "<svg class=\"histogram\"")
        #expect(panels.count >= 2)
        var bases: [String: Int] = [:]
        for panel in panels {
            let attributes = htmlAttributes(String(panel.prefix { $0 != ">" }))
            let language = try #require(attributes["data-language"]), orientation = try #require(attributes["data-orientation"])
            let rows = try Self.sqlite(daemon.database, """
                SELECT height_bin, SUM(count) FROM height_counts WHERE model = '\(model)' AND language = '\(language)'
                AND orientation = '\(orientation)' AND keyboard_type = 'default' AND placement = 'docked'
                GROUP BY height_bin HAVING SUM(count) > 0 ORDER BY height_bin
                """).split(separator: "\n")
            let bars = htmlTags(panel, "<rect class=\"bar\"")
            #expect(bars.count == rows.count, "\(language) \(orientation)")
            for (bar, row) in zip(bars, rows) {
                let columns = row.split(separator: "|")
                #expect(Double(bar["data-bin"] ?? "") == Double(columns[0]) && bar["data-count"] == String(columns[1]))
            }
            let marker = try #require(htmlTags(panel, "<g class=\"estimate\"").first)
            let served = try daemon.get("/v1/height?model=\(model)&language=\(language)&orientation=\(orientation)")
            #expect(served.json?["height"]?.double == Double(marker["data-height"] ?? ""), "\(language) \(orientation)")
            #expect(served.json?["basis"] == .string(marker["data-basis"] ?? ""))
            bases[marker["data-basis"] ?? "", default: 0] += 1
        }

        // Cold start per key: the figures kbtd stats prints, and the saving is their difference.
        let stats = try daemon.stats()
        let coldRows = htmlTags(html, "<tr class=\"coldstart-key\"")
        #expect(!coldRows.isEmpty)
        for row in coldRows {
            let line = try #require((stats["stats"]?.array ?? []).first { line in
                line["model"] == .string(row["data-model"] ?? "") && line["os_major"]?.double == Double(row["data-os"] ?? "")
                    && line["language"] == .string(row["data-language"] ?? "")
                    && line["orientation"] == .string(row["data-orientation"] ?? "")
                    && line["keyboard_type"] == .string(row["data-keyboard-type"] ?? "")
            })
            let cold50 = try #require(line["cold_start_p50_ms"]?.double), warm50 = try #require(line["preloaded_p50_ms"]?.double)
            let cold95 = try #require(line["cold_start_p95_ms"]?.double), warm95 = try #require(line["preloaded_p95_ms"]?.double)
            #expect(Double(row["data-cold-p50"] ?? "") == cold50 && Double(row["data-warm-p50"] ?? "") == warm50)
            #expect(Double(row["data-cold-p95"] ?? "") == cold95 && Double(row["data-warm-p95"] ?? "") == warm95)
            #expect(abs((Double(row["data-saving-p50"] ?? "") ?? .nan) - (cold50 - warm50)) < 1e-9)
            #expect(abs((Double(row["data-saving-p95"] ?? "") ?? .nan) - (cold95 - warm95)) < 1e-9)
        }

        // Samples per hour add up to every sample the fleet had acknowledged.
        let hours = htmlTags(html, "<rect class=\"hour\"")
        #expect(hours.compactMap { Int($0["data-samples"] ?? "") }.reduce(0, +) == fleet.acknowledged?.samples)

        // Answers by basis: the height questions above are counted, per basis, on the next page.
        let before = Dictionary(uniqueKeysWithValues: htmlTags(html, "<rect class=\"basis\"").map { ($0["data-basis"]!, Int($0["data-count"]!)!) })
        let after = try daemon.get("/dashboard").text
        for tag in htmlTags(after, "<rect class=\"basis\"") {
            let basis = tag["data-basis"]!
            #expect(Int(tag["data-count"]!)! - (before[basis] ?? 0) == bases[basis] ?? 0, "\(basis)")
        }

        // A screenshot for people (kept when KBTD_DASHBOARD_SCREENSHOT names a file).
        let shot = ProcessInfo.processInfo.environment["KBTD_DASHBOARD_SCREENSHOT"]
            ?? daemon.directory.appendingPathComponent("dashboard.png").path
        let screenshot = try await Self.browser(profile, ["--screenshot=\(shot)", "--window-size=1280,2400", "--hide-scrollbars",
                                                          "\(base)/dashboard"])
        #expect(screenshot.status == 0, "\(screenshot.stderr.suffix(2000))")
        let png = try Data(contentsOf: URL(fileURLWithPath: shot))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 20_000)
    }

    /// The change table: a key stored 25 days ago at 380 pt that today's
    /// batches move to 384 pt shows, in Chromium, the day its height changed and from what;
    /// a steady key shows no change; the height now is what `/v1/height` serves.
    @Test(.enabled(if: chromium != nil,
                   "Chromium is not installed: `apt-get install chromium` (scripts/dev deps and .ci/run install it)"))
    func theChangeTableShowsWhenAKeysHeightMovedAndFromWhat() async throws {
        let daemon = TestDaemon()
        let model = VoteAgeTests.model
        let then = Int64(Date().timeIntervalSince1970) - 25 * VoteAgeTests.day
        do {
            // As a daemon stored them 25 days ago (receipt times are the commit's).
            let store = try SQLiteTelemetryStore(path: daemon.database)
            for i in 0..<10 {
                for (language, height) in [("ja-JP", 380.0), ("en-US", 336.0)] {
                    let batch = VoteAgeTests.batch("old-\(language)-\(i)", at: then + Int64(i), network: "10.1.\(i).0", height: height,
                                                   count: 150, language: language, cap: 1_000)
                    #expect(try store.commit([batch]).stored == [true])
                }
            }
        }
        try daemon.start()
        let dayBefore = Int(Date().timeIntervalSince1970) / 86_400
        for _ in 0..<3 {
            let samples = shows(100, height: 384, language: "ja-JP") + shows(20, height: 336, language: "en-US")
            let response = try daemon.post(gzip(batchBody(model: model, os: "26.1", samples: samples)), encoding: "gzip")
            #expect(response.status == 202, "\(response.text)")
        }
        let dayAfter = Int(Date().timeIntervalSince1970) / 86_400
        let profile = daemon.directory.appendingPathComponent("chromium")
        let dom = try await Self.browser(profile, ["--dump-dom", "http://127.0.0.1:\(daemon.port)/dashboard?model=\(model)"])
        #expect(dom.status == 0, "\(dom.stderr.suffix(2000))")
        #expect(!dom.stderr.contains("Content Security Policy"), "CSP violation: \(dom.stderr.suffix(2000))")
        let rows = htmlTags(dom.stdout, "<tr class=\"change\"")
        #expect(rows.map { $0["data-language"] } == ["en-US", "ja-JP"], "\(rows)")
        let moved = try #require(rows.first { $0["data-language"] == "ja-JP" })
        #expect(moved["data-height"] == "384.0" && moved["data-from"] == "380.0", "\(moved)")
        let day = try #require(Int(moved["data-changed-day"] ?? ""))
        #expect((dayBefore...dayAfter).contains(day), "changed today: \(day)")
        let served = try daemon.get("/v1/height?model=\(model)&language=ja-JP&os=26.1")
        #expect(served.json?["height"]?.double == 384)
        let steady = try #require(rows.first { $0["data-language"] == "en-US" })
        #expect(steady["data-height"] == "336.0" && steady["data-changed-day"] == nil && steady["data-from"] == nil, "\(steady)")
    }
}
