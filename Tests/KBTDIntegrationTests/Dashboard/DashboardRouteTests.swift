import Foundation
import KBTDCore
import KBTDReport
import Testing

/// `GET /dashboard`, `kbtd report --html` and 405 on the live daemon.
@Suite("Dashboard route, report command and 405", .ownThreads, .timeLimit(.minutes(10)))
struct DashboardRouteTests {
    /// Batches from two sources (trusted loopback) for one key, with cold starts, then a few height questions.
    static func feed(_ daemon: InProcessApp) async throws {
        var samples = shows(25, height: 346, language: "ja-JP") + shows(3, height: 302, language: "ja-JP")
        for i in 0..<8 { samples.append(TestSample(language: "ja-JP", height: 346, coldStartMs: 500 + Double(i * 40), preloaded: false)) }
        for i in 0..<8 { samples.append(TestSample(language: "ja-JP", height: 346, coldStartMs: 30 + Double(i), preloaded: true)) }
        #expect(try await daemon.post(batchBody(samples: samples)).status == 202)
        #expect(try await daemon.post(batchBody(model: "iPhone16,2", samples: shows(5, height: 336))).status == 202)
    }

    @Test func servesThePageWithItsPolicyAndCountsAnswersByBasis() async throws {
        let daemon = try InProcessApp()
        try await Self.feed(daemon)
        #expect(try await daemon.get("/v1/height?model=iPhone17,1&language=ja-JP").json?["basis"] == .string("model+language"))
        #expect(try await daemon.get("/v1/height?model=iPhone17,1&language=ja-JP&os=26.1").json?["basis"] == .string("model+os+language"))
        #expect(try await daemon.get("/v1/height?model=iPhone9,9&language=en-US").json?["basis"] == .string("default"))

        let all = try await daemon.get("/v1/heights?model=iPhone17,1").json
        let estimateBases = all?["estimates"]?.array?.compactMap { $0["basis"]?.string } ?? []
        #expect(!estimateBases.isEmpty)

        let page = try await daemon.get("/dashboard?model=iPhone17,1")
        #expect(page.status == 200 && page.header("Content-Type") == "text/html; charset=utf-8")
        #expect(page.header("Content-Security-Policy") == DashboardPage.contentSecurityPolicy)
        let html = page.text
        #expect(htmlTags(html, "<rect class=\"bar\"").map { $0["data-bin"] } == ["302.0", "346.0"])
        let basis = Dictionary(uniqueKeysWithValues: htmlTags(html, "<rect class=\"basis\"").map { ($0["data-basis"]!, $0["data-count"]!) })
        #expect(basis == ["model+os+language": "1", "model+language": "1", "model+language-delta": "0", "model": "0",
                          "screen+language": "0", "default": "1"])
        // Each estimate of the /v1/heights answer counts once under its basis.
        var expected: [String: Int] = [:]
        for basis in estimateBases { expected[basis, default: 0] += 1 }
        for tag in htmlTags(html, "<rect class=\"basis-model\"") {
            #expect(Int(tag["data-count"] ?? "") == expected[tag["data-basis"] ?? ""] ?? 0, "\(tag)")
        }
        // The same counters on /metrics.
        let metrics = try await daemon.get("/metrics").text
        #expect(metrics.contains("kbtd_height_answers_total{route=\"/v1/height\",basis=\"default\"} 1"))
        // Hourly ingest: both batches, every accepted sample.
        let hours = htmlTags(html, "<rect class=\"hour\"")
        #expect(hours.compactMap { Int($0["data-samples"] ?? "") }.reduce(0, +) == 49)
        #expect(hours.compactMap { Int($0["data-batches"] ?? "") }.reduce(0, +) == 2)

        let bad = try await daemon.get("/dashboard?os=twenty")
        #expect(bad.status == 400 && bad.json?["field"] == .string("os"))
    }

    @Test func reportWritesTheSamePageFromTheDatabase() async throws {
        let daemon = try InProcessApp()
        try await Self.feed(daemon)
        let live = try await daemon.get("/dashboard?model=iPhone17,1").text
        let file = daemon.directory.appendingPathComponent("report.html").path
        let result = try runKBTD(["report", "--html", file, "--database", daemon.database, "--model", "iPhone17,1"])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try String(contentsOfFile: file, encoding: .utf8)
        for prefix in ["<rect class=\"bar\"", "<g class=\"estimate\"", "<tr class=\"coldstart-key\"", "<tr class=\"thin-key\"",
                       "<rect class=\"hour\""] {
            #expect(htmlTags(report, prefix) == htmlTags(live, prefix), "\(prefix)")
        }
        #expect(report.contains("a report written from the database file has none"))

        let missing = try runKBTD(["report", "--html", file, "--database", daemon.directory.appendingPathComponent("none.sqlite").path])
        #expect(missing.status == 66 && missing.stderr.contains("none.sqlite"))
        let badFilter = try runKBTD(["report", "--html", file, "--database", daemon.database, "--language", "ja JP"])
        #expect(badFilter.status == 64 && badFilter.stderr.contains("--language"))
        let unwritable = try runKBTD(["report", "--html", "/nonexistent/dir/r.html", "--database", daemon.database])
        #expect(unwritable.status == 73 && unwritable.stderr.contains("--html /nonexistent/dir/r.html"))
    }

    @Test func aKnownPathWithTheWrongMethodIs405WithAllow() async throws {
        let daemon = try InProcessApp()
        let routes: [(String, String)] = [
            ("/v1/batches", "POST"), ("/v1/height", "GET"), ("/v1/heights", "GET"), ("/v1/stats", "GET"),
            ("/healthz", "GET"), ("/metrics", "GET"), ("/dashboard", "GET"),
        ]
        for (path, method) in routes {
            for wrong in ["GET", "POST", "PUT", "DELETE", "PATCH"] where wrong != method {
                let response = try await daemon.request(wrong, path, body: wrong == "GET" ? [] : Array("{}".utf8))
                #expect(response.status == 405, "\(wrong) \(path)")
                // HEAD is answered wherever GET is.
                #expect(response.header("Allow") == (method == "GET" ? "GET, HEAD" : method), "\(wrong) \(path)")
                #expect(response.json?["error"] == .string("method not allowed"))
            }
            // The right method reaches the route (no 404 and no 405).
            let right = try await daemon.request(method, path, body: method == "POST" ? Array("{}".utf8) : [])
            #expect(right.status != 404 && right.status != 405, "\(method) \(path): \(right.status)")
        }
        #expect(try await daemon.request("DELETE", "/nowhere").status == 404)
    }
}
