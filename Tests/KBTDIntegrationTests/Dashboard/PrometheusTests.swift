import Foundation
import KBTDCore
import Testing

/// contrib/prometheus against the real thing: `promtool` checks the rules,
/// and Debian's Prometheus scrapes a live kbtd (loopback, a port from ToolPorts, a
/// temporary directory) with those rules loaded.
@Suite("Prometheus scrapes kbtd", .ownThreads, .timeLimit(.minutes(10)))
struct PrometheusTests {
    static let rules = TestPaths.repositoryRoot.appendingPathComponent("contrib/prometheus/kbtd-rules.yml").path
    static let installed = FileManager.default.isExecutableFile(atPath: "/usr/bin/prometheus")
        && FileManager.default.isExecutableFile(atPath: "/usr/bin/promtool")

    /// Prometheus' HTTP API answer for an instant query, parsed.
    static func query(_ port: Int, _ expression: String) throws -> JSONValue? {
        let encoded = expression.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? expression
        let response = try HTTPTestConnection(.tcp(host: "127.0.0.1", port: port)).request("GET", "/api/v1/query?query=\(encoded)")
        return response.status == 200 ? response.json : nil
    }

    @Test(.enabled(if: installed, "Prometheus is not installed: `apt-get install prometheus` (scripts/dev deps and .ci/run install it)"))
    func rulesPassPromtool() async throws {
        let check = try await DashboardBrowserTests.run("/usr/bin/promtool", ["check", "rules", Self.rules])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        #expect(check.stdout.contains("SUCCESS"))
    }

    @Test(.enabled(if: installed, "Prometheus is not installed: `apt-get install prometheus` (scripts/dev deps and .ci/run install it)"))
    func prometheusScrapesKbtdAndEvaluatesTheRules() async throws {
        let daemon = try TestDaemon().start()
        #expect(try daemon.post(batchBody(samples: shows(3, height: 346))).status == 202)
        #expect(try daemon.get("/v1/height?model=iPhone17,1&language=en-US").status == 200)

        let directory = daemon.directory.appendingPathComponent("prometheus")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let config = directory.appendingPathComponent("prometheus.yml")
        try """
            global: {scrape_interval: 1s, evaluation_interval: 1s}
            rule_files: ["\(Self.rules)"]
            scrape_configs:
              - job_name: kbtd
                static_configs: [{targets: ["127.0.0.1:\(daemon.port)"]}]
            """.write(to: config, atomically: true, encoding: .utf8)
        let log = directory.appendingPathComponent("prometheus.log").path
        // Prometheus cannot listen on port 0 and say which port it got: ToolPorts retries a start whose port was taken.
        let (port, process) = try ToolPorts.start(1, "Prometheus") { ports in
            let process = try SpawnedProcess("/usr/bin/prometheus", [
                "--config.file=\(config.path)", "--storage.tsdb.path=\(directory.appendingPathComponent("data").path)",
                "--web.listen-address=127.0.0.1:\(ports[0])", "--log.level=info"], stderr: log)
            let text = { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
            do {
                try waitForChange(of: log, "Prometheus to say it is ready", stop: process.exited, detail: text) {
                    text().contains("Server is ready to receive web requests")
                }
            } catch {
                process.terminate()
                if ToolPorts.saysAddressInUse(text()) { throw PortTaken(description: text()) }
                throw error
            }
            return (ports[0], process)
        }
        defer { process.terminate() }

        // Wait (up to 60 s) for a scrape that saw kbtd up, and for the rules to have been evaluated
        // (Prometheus's state, asked again until it holds; the wait ends if Prometheus exits).
        var up: JSONValue?, capacity: JSONValue?, recorded: JSONValue?
        try? waitUntil("Prometheus to have scraped kbtd up and evaluated the rules", pace: process.exited) {
            up = try? Self.query(port, "up{job=\"kbtd\"}")?["data"]?["result"]?.array?.first
            capacity = try? Self.query(port, "kbtd_write_queue_capacity")?["data"]?["result"]?.array?.first
            recorded = try? Self.query(port, "instance:kbtd_write_queue:utilisation")?["data"]?["result"]?.array?.first
            return up?["value"]?.array?.last == .string("1") && capacity != nil && recorded != nil
        }
        let prometheusLog = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(up?["value"]?.array?.last == .string("1"), "kbtd not scraped up; prometheus log:\n\(prometheusLog)")
        #expect(capacity?["value"]?.array?.last == .string("1024"), "the default write_queue_capacity")
        #expect(recorded?["metric"]?["instance"] == .string("127.0.0.1:\(daemon.port)"))
        // kbtd's own series, with the values kbtd counted.
        let stored = try Self.query(port, "kbtd_batches_total{outcome=\"stored\"}")?["data"]?["result"]?.array?.first
        #expect(stored?["value"]?.array?.last == .string("1"))
        let answers = try Self.query(port, "kbtd_height_answers_total")?["data"]?["result"]?.array ?? []
        #expect(answers.contains { $0["metric"]?["basis"] == .string("default") && $0["value"]?.array?.last == .string("1") })
        // Every rule loaded and evaluated without error.
        let rules = try HTTPTestConnection(.tcp(host: "127.0.0.1", port: port)).request("GET", "/api/v1/rules").json
        let groups = rules?["data"]?["groups"]?.array ?? []
        let all = groups.flatMap { $0["rules"]?.array ?? [] }
        #expect(all.count == 18 && all.allSatisfy { $0["health"] == .string("ok") || $0["health"] == .string("unknown") },
                "\(all.map { "\($0["name"] ?? .null): \($0["health"] ?? .null) \($0["lastError"] ?? .null)" })")
    }
}
