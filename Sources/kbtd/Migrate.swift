import ArgumentParser
import Foundation
import KBTDCore
import KBTDPostgres
import KBTDStore
import Logging

/// `kbtd migrate --from kbtd.sqlite --to postgres://...`: moves an embedded
/// installation to PostgreSQL. Counts merge by addition; seen batch ids come
/// along; a second import of the same file is refused (exit 65), so running
/// it twice never doubles anything.
struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Move an SQLite installation into PostgreSQL (counts add up; a second import of the same file is refused).")

    @Option(help: "The SQLite database file to read (opened read-only).") var from: String
    @Option(help: "The PostgreSQL URL to write to (postgres://user@host/dbname); password also from KBTD_DATABASE_PASSWORD.")
    var to: String

    func run() async throws {
        guard !PostgresURL.isURL(from) else {
            throw fail("--from must be an SQLite file (moving PostgreSQL to PostgreSQL is pg_dump's job)", code: ExitStatus.usage)
        }
        guard PostgresURL.isURL(to) else { throw fail("--to must be a postgres:// URL", code: ExitStatus.usage) }
        var url: PostgresURL
        do {
            url = try PostgresURL(to)
            try url.resolvePassword()
        } catch {
            throw fail("--to: \(error.description)", code: ExitStatus.usage)
        }
        guard FileManager.default.fileExists(atPath: from) else {
            throw fail("--from: database \(from) does not exist", code: ExitStatus.noInput)
        }
        let work: StoreImport
        do {
            let source = try SQLiteTelemetryStore(path: from, access: .readOnly)
            var batchIDs: [StoredBatchID] = []
            try source.forEachBatchIDs { batchIDs += $0 }
            let path = URL(fileURLWithPath: from).resolvingSymlinksInPath().path
            work = StoreImport(source: "sqlite:\(path)@\(try source.creationTime())", counts: try source.countsForImport(),
                               keys: try source.storedKeys(), batchIDs: batchIDs, hourly: try source.hourlyIngest(since: 0))
        } catch {
            throw fail("--from: cannot read database \(from): \(error)", code: ExitStatus.noInput)
        }
        let database = PostgresDatabase(url: url, maxConnections: 2, operationTimeout: .seconds(3600), logger: Logger(label: "kbtd"))
        defer { database.close() }
        let start = ContinuousClock.now
        let newIDs: Int
        do {
            newIDs = try await work.run(into: database)
        } catch let error as StoreImport.AlreadyImported {
            throw fail(error.description, code: ExitStatus.dataError)
        } catch {
            throw fail("--to: cannot write to \(url): \(PostgresDatabase.describe(error))", code: ExitStatus.unavailable)
        }
        let samples = work.counts.animations.values.reduce(0, +)
        print("imported \(from) into \(url): \(work.counts.seriesKeys.count) keys, \(samples) samples, "
              + "\(work.batchIDs.count) batch ids (\(newIDs) new there) in \(ContinuousClock.now - start)")
        print("restart the kbtd nodes on \(url) so that their height index includes the imported counts")
    }
}
