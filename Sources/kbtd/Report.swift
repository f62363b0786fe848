import ArgumentParser
import Foundation
import KBTDCore
import KBTDReport
import KBTDServer
import KBTDStore

struct Report: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write the dashboard page (what GET /dashboard shows) from the database, without a running daemon.")

    @Option(help: "The HTML file to write (- for standard output).") var html: String
    @Option(help: "SQLite database file or postgres:// URL. Default: KBTD_DATABASE, else kbtd.sqlite.") var database: String?
    @Option(help: "Config file, for min_samples and default heights (default: KBTD_CONFIG).") var config: String?
    @Option(help: "Only this device model, e.g. iPhone17,1.") var model: String?
    @Option(help: "Only this OS major version (26 or 26.1).") var os: String?
    @Option(help: "Only this keyboard language, e.g. ja-JP.") var language: String?

    func run() async throws {
        let parameters: [String: String?] = ["model": model, "os": os, "language": language]
        let filter: DashboardFilter
        do {
            filter = try DashboardFilter.parse { parameters[$0] ?? nil }
        } catch {
            throw fail("--\(error.field): \(error.reason)", code: ExitStatus.usage)
        }
        var flags: [String: String] = [:]
        if let database { flags["database"] = database }
        let settings = try resolveSettings(config: config, flags: flags)
        let path = settings.database
        let store = try await openStore(path)
        let now = Int64(Date().timeIntervalSince1970)
        let data: DashboardData, hourly: [HourlyIngest]
        var index = HeightIndex()
        do {
            // What the page draws, aggregated in the database (bounded whatever the number of keys).
            data = try await store.dashboardData(filter, minSamples: settings.estimator.minSamples)
            hourly = try await store.hourlyIngest(since: now / 3600 * 3600 - 167 * 3600)
            // The marked estimate is what the daemon serves: only keys admitted to its index answer
            // (at most max_indexed_keys, the memory the daemon's own index takes).
            index.apply(try await store.loadIndexCounts())
        } catch {
            throw fail("cannot read database \(loggableDatabase(path)): \(error)", code: ExitStatus.noInput)
        }
        let estimator = HeightEstimator(settings: settings.estimator)
        let page = DashboardPage.render(DashboardInput(
            data: data, hourly: hourly, answersByBasis: nil, filter: filter, minSamples: settings.estimator.minSamples,
            generatedAt: now, live: false, estimate: { estimator.estimate($0, in: index) },
            changes: { estimator.heightChanges(model: $0, in: index) }, screens: { ScreenReports.of($0, in: index) }))
        if html == "-" {
            FileHandle.standardOutput.write(Data(page.utf8))
            return
        }
        do {
            try Data(page.utf8).write(to: URL(fileURLWithPath: html), options: .atomic)
        } catch {
            throw fail("--html \(html): cannot write: \(error.localizedDescription)", code: ExitStatus.cannotCreate)
        }
    }
}
