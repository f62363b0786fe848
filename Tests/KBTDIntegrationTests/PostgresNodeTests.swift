import Foundation
import KBTDCore
@testable import KBTDPostgres
import KBTDStore
import Logging
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Real daemons on one real PostgreSQL cluster (started by the test): the
/// scaled-out deployment of docs/scaling-out.md.
@Suite("PostgreSQL: several kbtd nodes on one database", .ownThreads, .timeLimit(.minutes(10)), .serialized, .enabled(if: TestPostgres.available))
struct PostgresNodeTests {
    /// A node of the test fleet: the catch-up bound is half a second, so tests wait little.
    static func node(_ postgres: TestPostgres, url: String? = nil, environment: [String: String] = [:]) -> TestDaemon {
        TestDaemon(database: url ?? postgres.url, extraArguments: ["--log-level", "info"],
                   environment: ["KBTD_INDEX_CATCH_UP_SECONDS": "0.5", "KBTD_RETRY_AFTER_SECONDS": "2"].merging(environment) { $1 })
    }

    /// Starts the nodes at the same moment (their migrations race for the advisory lock).
    static func startTogether(_ nodes: [TestDaemon]) throws {
        let failures = ConcurrentResults<String>()
        DispatchQueue.concurrentPerform(iterations: nodes.count) { i in
            do { try nodes[i].start() } catch { failures.append("\(error)") }
        }
        if let failure = failures.values.first { throw HTTPTestError(description: failure) }
    }

    @Test func retriesAcrossNodesAreDuplicatesAndBothNodesServeEveryCommit() throws {
        let postgres = try TestPostgres()
        let nodes = [Self.node(postgres), Self.node(postgres, url: postgres.socketURL)]
        try Self.startTogether(nodes)
        #expect(try postgres.psql("kbtd", "SELECT COUNT(*) FROM schema_migrations") == "\(PostgresSchema.latestVersion)")

        // Each batch goes to one node, its retry to the other.
        var bodies: [[UInt8]] = []
        for i in 0..<40 {
            let language = i % 2 == 0 ? "ja-JP" : "en-US"
            let body = gzip(batchBody(samples: shows(1 + i % 3, height: language == "ja-JP" ? 392 : 336, language: language)))
            bodies.append(body)
            let first = try nodes[i % 2].post(body, encoding: "gzip")
            #expect(first.status == 202, "\(first.text)")
            let retry = try nodes[(i + 1) % 2].post(body, encoding: "gzip")
            #expect(retry.status == 200)
            #expect(retry.json?["duplicate"] == .bool(true))
        }
        let expectedJa = (0..<40).filter { $0 % 2 == 0 }.reduce(0) { $0 + 1 + $1 % 3 }
        let expectedEn = (0..<40).filter { $0 % 2 == 1 }.reduce(0) { $0 + 1 + $1 % 3 }

        // kbtd stats on the URL: exact totals, nothing counted twice.
        let stats = try nodes[0].stats()
        #expect(stats["samples"] == .number(Double(expectedJa + expectedEn)))
        #expect(statsRow(stats, model: "iPhone17,1", language: "ja-JP")?["samples"] == .number(Double(expectedJa)))
        #expect(try postgres.psql("kbtd", "SELECT COUNT(*) FROM batches") == "40")

        // Each node catches up with the other's commits (every 0.5 s): awaited, bounded, then compared.
        for language in ["ja-JP", "en-US"] {
            let expected = language == "ja-JP" ? expectedJa : expectedEn
            let path = "/v1/height?model=iPhone17,1&language=\(language)&os=26.1"
            #expect(throws: Never.self, "the nodes did not both reach \(expected) \(language) samples") {
                try waitUntil("both nodes to answer \(expected) \(language) samples") {
                    nodes.allSatisfy { (try? $0.get(path).json?["samples"]) == .number(Double(expected)) }
                }
            }
        }
        for language in ["ja-JP", "en-US"] {
            let path = "/v1/height?model=iPhone17,1&language=\(language)&os=26.1"
            let answers = try nodes.map { try $0.get(path) }
            #expect(answers[0].text == answers[1].text)
            let expected = language == "ja-JP" ? expectedJa : expectedEn
            #expect(answers[0].json?["samples"] == .number(Double(expected)), "\(answers[0].text)")
            #expect(answers[0].json?["basis"] == .string("model+os+language"))
            // kbtd height on the URL prints the same bytes.
            let cli = try runKBTD(["height", "--database", postgres.url, "--model", "iPhone17,1", "--language", language, "--os", "26.1"])
            #expect(cli.status == 0, "\(cli.stderr)")
            #expect(cli.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == answers[0].text)
        }
        let health = try nodes[1].get("/healthz")
        #expect(health.status == 200)
        #expect(health.json?["store"] == .string("postgresql"))
        #expect(health.json?["index_lag_seconds"]?.double.map { $0 < 2 } == true)
        let metrics = try nodes[1].get("/metrics").text
        #expect(metrics.contains("kbtd_store_info{kind=\"postgresql\"} 1"))
        #expect((try nodes[1].metric("kbtd_index_catch_up_commits_total") ?? 0) >= 1)
        let pageOfStats = try nodes[1].get("/v1/stats")
        #expect(pageOfStats.status == 200)
        #expect(pageOfStats.json?["samples"] == .number(Double(expectedJa + expectedEn)))
        #expect(try nodes[1].get("/dashboard").status == 200)
        for node in nodes { #expect(node.stop() == 0) }
    }

    /// Loopback is a stranger, 5 new keys a network a day; the nodes of one cluster share the source
    /// key (docs/scaling-out.md): the same network is the same source on each.
    static let budgetsEnvironment = ["KBTD_TRUSTED_PEERS": "unix", "KBTD_RATE_LIMIT_LOCAL_PEERS": "true",
                                     "KBTD_MAX_NEW_KEYS_PER_SOURCE_PER_DAY": "5", "KBTD_SOURCE_KEY": "00112233445566778899aabbccddeeff"]

    /// A gzip batch of `samples` posted to `node` from the loopback address `source`.
    static func post(_ node: TestDaemon, from source: String, _ samples: [TestSample]) throws -> HTTPTestResponse {
        try node.connection(from: source).request(
            "POST", "/v1/batches", headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")],
            body: gzip(batchBody(samples: samples)))
    }

    /// The day's vote ledger and new-key quotas live in the database: a node started after an
    /// attacker spent its budgets on another (or the same node restarted) finds them spent.
    @Test func theDaysBudgetsAreSharedWithNodesStartedLater() throws {
        let postgres = try TestPostgres()
        let environment = Self.budgetsEnvironment
        let first = Self.node(postgres, environment: environment)
        try first.start()
        for source in ["127.0.1.2", "127.0.2.3", "127.0.3.4"] {
            #expect(try Self.post(first, from: source, shows(10, height: 346)).status == 202)
        }
        let attacker = "127.0.9.9"
        #expect(try Self.post(first, from: attacker, shows(5, height: 360) + (0..<5).flatMap { shows(1, height: 346, language: "q\($0)-XX") })
            .status == 202)
        #expect(first.stop() == 0)

        let second = Self.node(postgres, environment: environment)
        try second.start()
        let again = try Self.post(second, from: attacker, shows(5, height: 360) + shows(1, height: 346, language: "r-XX"))
        #expect(again.status == 202)
        #expect(again.json?["errors"]?.array?.first?["field"] == .string("key"), "the quota spent on the first node: \(again.text)")
        #expect(try postgres.psql("kbtd", "SELECT SUM(votes) FROM vote_ledger WHERE source <> 0") == "25",
                "15 honest votes and the attacker's 10 (5 on 360 pt, 1 on each new language), none from its second batch")
        let height = try second.get("/v1/height?model=iPhone17,1&language=en-US&os=26.1")
        #expect(height.json?["height"] == .number(346), "\(height.text)")
        #expect(second.stop() == 0)
    }

    /// Two nodes running at once: what a network spends on one (votes, new keys) is spent on the
    /// other once it has caught up with the first's commit, so splitting its batches across the
    /// nodes of a cluster buys no second budget.
    @Test func nodesRunningAtOnceShareTheDaysBudgets() throws {
        let postgres = try TestPostgres()
        let environment = Self.budgetsEnvironment
        let nodes = [Self.node(postgres, environment: environment), Self.node(postgres, environment: environment)]
        try Self.startTogether(nodes)
        let attacker = "127.0.9.9"
        #expect(try Self.post(nodes[0], from: attacker, (0..<5).flatMap { shows(1, height: 346, language: "q\($0)-XX") }).status == 202)
        // The other node learns of the commit within its catch-up bound (0.5 s): wait for it, bounded.
        try nodes[1].until("node 1's first index catch-up commit (kbtd_index_catch_up_commits_total)", seconds: 30) {
            (try nodes[1].metric("kbtd_index_catch_up_commits_total") ?? 0) >= 1
        }
        let second = try Self.post(nodes[1], from: attacker, shows(1, height: 346, language: "r-XX"))
        #expect(second.status == 202)
        #expect(second.json?["errors"]?.array?.first?["field"] == .string("key"),
                "the quota spent on the other node is spent here: \(second.text)")
        for node in nodes { #expect(node.stop() == 0) }
    }

    @Test func killNineOfOneNodeUnderLoadLosesNothingAndCountsNothingTwice() throws {
        let postgres = try TestPostgres()
        let nodes = [Self.node(postgres), Self.node(postgres)]
        try Self.startTogether(nodes)
        let count = 240
        let bodies = (0..<count).map { i in gzip(batchBody(samples: shows(1 + i % 5, height: 336))) }
        let expected = (0..<count).reduce(0) { $0 + 1 + $1 % 5 }
        let stored = ConcurrentResults<Int>()
        let duplicates = ConcurrentResults<Int>()
        let refused = ConcurrentResults<Int>()
        let victim = try #require(nodes[0].process?.processIdentifier)
        let failedOnVictim = ConcurrentResults<Int>()
        // Mid-load: once a sixth of the batches are in (an event the workers report, not a delay).
        stored.onCount(count / 6) { kill(victim, SIGKILL) }
        // Clients prefer node 0 for even batches; on a refused connection, a 503 or a broken
        // response they retry on the other node, as a load balancer's health check would send them.
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            for i in stride(from: worker, to: count, by: 4) {
                var target = i % 2
                for _ in 0..<20 {
                    if let response = try? nodes[target].post(bodies[i], encoding: "gzip") {
                        if response.status == 202 { stored.append(i); break }
                        if response.status == 200 { duplicates.append(i); break }
                        refused.append(response.status)
                    } else if target == 0 {
                        failedOnVictim.append(i)
                    }
                    target = 1 - target
                }
            }
        }
        kill(victim, SIGKILL)  // had fewer than a sixth been stored, the expectations below fail
        #expect(nodes[0].waitForExit() == SIGKILL)
        let acknowledged = Set(stored.values).union(duplicates.values)
        #expect(acknowledged.count == count, "every batch is acknowledged by one node or the other")
        #expect(!failedOnVictim.values.isEmpty, "the kill must land while clients still send to the victim")
        #expect(Set(stored.values).count == stored.values.count, "no batch was stored twice")
        #expect(refused.values.allSatisfy { $0 == 503 }, "\(refused.values)")
        // A retry of anything acknowledged is a duplicate on the surviving node.
        for i in stride(from: 0, to: count, by: 16) {
            #expect(try nodes[1].post(bodies[i], encoding: "gzip").status == 200)
        }
        let stats = try nodes[1].stats()
        #expect(stats["samples"] == .number(Double(expected)))
        #expect(try postgres.psql("kbtd", "SELECT COUNT(*) FROM batches") == "\(count)")
        #expect(nodes[1].stop() == 0)
        print("postgres kill -9: \(count) batches, \(stored.values.count) stored with a 202, \(duplicates.values.count) answered as duplicates, \(failedOnVictim.values.count) requests failed on the killed node and went to the other, \(expected) samples, 0 lost, 0 double-counted")
    }

    @Test func postgresRestartedUnderLoadAnswers503AndReconnectsWithoutRestart() throws {
        let postgres = try TestPostgres()
        let node = Self.node(postgres)
        try node.start()
        var bodies: [[UInt8]] = []
        var acknowledged = Set<Int>()
        var statuses: [Int: Int] = [:]
        var retryAfter: [String] = []
        // PostgreSQL goes down once three batches are in, and comes back once the node has answered
        // a 503 (it waited its 5 s for a connection and refused): events the test sees, not delays.
        var postgresDown = false, postgresBack = false
        let deadline = Deadline(120, for: "every batch acknowledged across PostgreSQL's restart")
        while !postgresBack || acknowledged.count < bodies.count, !deadline.hasPassed {
            if !postgresBack { bodies.append(gzip(batchBody(samples: shows(2, height: 336)))) }
            for i in 0..<bodies.count where !acknowledged.contains(i) {
                guard let response = try? node.post(bodies[i], encoding: "gzip") else { continue }
                statuses[response.status, default: 0] += 1
                if response.status == 202 || response.status == 200 { acknowledged.insert(i) }
                if response.status == 503 { retryAfter.append(response.header("Retry-After") ?? "missing") }
            }
            if !postgresDown && acknowledged.count >= 3 {
                try postgres.stop(mode: "fast")
                postgresDown = true
            } else if postgresDown && !postgresBack && (statuses[503] ?? 0) > 0 {
                try postgres.start()
                postgresBack = true
            }
        }
        #expect(acknowledged.count == bodies.count)
        #expect(postgresBack, "PostgreSQL was restarted after the node refused a batch (\(statuses))")
        #expect((statuses[503] ?? 0) > 0, "while PostgreSQL was down some batches must have been refused (\(statuses))")
        #expect(Set(statuses.keys).isSubset(of: [200, 202, 503]), "\(statuses)")
        #expect(retryAfter.allSatisfy { $0 == "2" }, "\(retryAfter)")
        #expect(try node.stats()["samples"] == .number(Double(2 * bodies.count)))
        // The index catch-up reconnects too (its next poll after PostgreSQL is back): healthy again.
        try node.until("/healthz to answer 200 once PostgreSQL is back") { try node.get("/healthz").status == 200 }
        #expect(node.stop() == 0)
        print("postgres restart: \(bodies.count) batches, statuses \(statuses.sorted { $0.key < $1.key }), all acknowledged once")
    }

    @Test func startUpWithPostgresUnreachableExitsClearlyOrWaitsWhenConfigured() throws {
        let postgres = try TestPostgres()
        try postgres.stop()
        let url = "postgres://kbtd:s3cret-pw@127.0.0.1:\(postgres.port)/kbtd"
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let refused = try runKBTD(["serve", "--listen", "127.0.0.1:0", "--database", url])
        #expect(refused.status == 69)
        #expect(refused.stderr.contains("cannot use the PostgreSQL database postgres://kbtd@127.0.0.1:\(postgres.port)/kbtd"),
                "\(refused.stderr)")
        #expect(!refused.stderr.contains("s3cret-pw"))
        let stats = try runKBTD(["stats", "--database", url])
        #expect(stats.status == 66)
        #expect(!stats.stderr.contains("s3cret-pw"))
        let badURL = try runKBTD(["serve", "--database", "postgres://kbtd:s3cret-pw@127.0.0.1:99999/kbtd"])
        #expect(badURL.status == 78)
        #expect(badURL.stderr.contains("port"))
        #expect(!badURL.stderr.contains("s3cret-pw"))

        // With database_wait_seconds, start-up waits for PostgreSQL instead.
        let node = Self.node(postgres, url: url, environment: ["KBTD_DATABASE_WAIT_SECONDS": "60"])
        // PostgreSQL comes back once start-up has seen a failed connection and said it waits.
        try node.launch()
        #expect(node.waitForLog("waiting up to 60.0 s for PostgreSQL"))
        try postgres.start()
        try node.awaitReady()
        #expect(!node.log_().contains("s3cret-pw"))
        #expect(try node.post(gzip(batchBody(samples: shows(1, height: 336))), encoding: "gzip").status == 202)
        #expect(node.stop() == 0)
    }

    @Test func countsMergeByAdditionBatchIDsComeAlongAndASecondRunIsRefused() async throws {
        let postgres = try TestPostgres()
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("kbtd.sqlite").path
        // The embedded installation: 30 batches through a real daemon.
        let embedded = TestDaemon(database: file)
        try embedded.start()
        var bodies: [[UInt8]] = []
        for i in 0..<30 {
            let body = gzip(batchBody(screen: "393x852", samples: shows(2, height: i % 3 == 0 ? 392 : 336, language: "ja-JP")))
            bodies.append(body)
            #expect(try embedded.post(body, encoding: "gzip").status == 202)
        }
        #expect(embedded.stop() == 0)
        let before = try SQLiteTelemetryStore(path: file, access: .readOnly).loadCounts()

        // PostgreSQL already holds counts of its own (a node ran there): they add up.
        let node = TestDaemon(database: postgres.url)
        try node.start()
        #expect(try node.post(gzip(batchBody(samples: shows(5, height: 336, language: "ja-JP"))), encoding: "gzip").status == 202)
        #expect(node.stop() == 0)

        let first = try runKBTD(["migrate", "--from", file, "--to", postgres.url])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("60 samples, 30 batch ids (30 new there)"), "\(first.stdout)")
        let second = try runKBTD(["migrate", "--from", file, "--to", postgres.url])
        #expect(second.status == 65)
        #expect(second.stderr.contains("already imported"), "\(second.stderr)")

        let database = PostgresDatabase(url: try PostgresURL(postgres.url), logger: Logger(label: "kbtd-test"))
        defer { database.close() }
        let after = try await PostgresTelemetryStore(database: database, migrate: false, forWriting: false).loadCounts()
        // Every height count is the file's plus the node's own 5 samples at 336 pt.
        #expect(after.animations.values.reduce(0, +) == 65)
        #expect(Set(after.heights.keys) == Set(before.heights.keys))
        for (key, count) in after.heights {
            #expect(count == before.heights[key, default: 0] + (key.halfPoints == 672 ? 5 : 0), "\(key)")
        }
        #expect(after.screens == before.screens)
        // Screen variants come along (the node's own batch reported no screen).
        #expect(!before.screenCounts.isEmpty && !before.screenSources.isEmpty)
        #expect(after.screenCounts == before.screenCounts && after.screenSources == before.screenSources)

        // A phone's retry after the move is a duplicate on the PostgreSQL node.
        try node.start()
        #expect(try node.post(bodies[7], encoding: "gzip").status == 200)
        let stats = try node.stats()
        #expect(stats["samples"] == .number(65))
        #expect(node.stop() == 0)
    }
}
