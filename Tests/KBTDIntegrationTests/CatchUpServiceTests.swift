import Foundation
import KBTDCore
@testable import KBTDServer
import KBTDStore
import Logging
import Testing

/// The PostgreSQL index catch-up runs as a service of the app's service group
/// (`BackgroundServices`) and stops with the app: after `shutdown()` returns,
/// nothing polls the database any more.
@Suite("PostgreSQL: the index catch-up is a service", .ownThreads, .serialized, .enabled(if: TestPostgres.available))
struct CatchUpServiceTests {
    @Test func shutdownStopsTheCatchUp() async throws {
        let postgres = try TestPostgres()
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let settings = try SettingsLoader.load(configFile: nil, environment: ["KBTD_INDEX_CATCH_UP_SECONDS": "0.1"], flags: [
            "database": postgres.url, "listen": "127.0.0.1:0",
            "source_key_file": directory.appendingPathComponent("source.key").path,
        ])
        var logger = Logger(label: "kbtd-test")
        logger.logLevel = .critical
        let node = try await PostgresNode.open(settings, admission: { IndexAdmission() }, logger: logger)
        let app = try KBTDApp(settings: settings, logger: logger, postgres: node)
        let catchUp = try #require(app.catchUp)

        // Running, and polling the database.
        try await waitUntil("the catch-up running and polling the database twice", detail: {
            "running: \(catchUp.isRunning), successful polls: \(catchUp.polls), last error: \(catchUp.lastError ?? "none")"
        }) {
            catchUp.isRunning && catchUp.polls >= 2
        }

        await app.shutdown()
        #expect(!catchUp.isRunning, "shutdown() returns once the catch-up's loop has ended")
        node.database.close()
    }
}
