import ArgumentParser
import Foundation
import KBTDCore
import KBTDStore
import KBTDServer

extension StatsFormat: ExpressibleByArgument {}

struct Stats: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Report what kbtd knows per key, reading the database read-only (safe while the daemon runs).")

    @Option(help: "SQLite database file. Default: KBTD_DATABASE, else kbtd.sqlite.")
    var database: String?

    @Option(help: "Only this device model, e.g. iPhone17,1.")
    var model: String?

    @Option(help: "Only this keyboard language, e.g. ja-JP.")
    var language: String?

    @Option(help: "Only this OS major version (26 or 26.1).")
    var os: String?

    @Option(help: "table, json or csv. Default: table on a terminal, json otherwise.")
    var format: StatsFormat?

    func validate() throws {
        if let os, BatchValidator.osMajor(os) == nil {
            throw ValidationError("--os must be a version like 26 or 26.1, got '\(os)'")
        }
    }

    func run() throws {
        var flags: [String: String] = [:]
        if let database { flags["database"] = database }
        let path = try resolveSettings(config: nil, flags: flags).database
        let counts = try openCounts(path)
        let rows = StatsReport.rows(from: counts, filter: StatsFilter(model: model, language: language,
                                                                       osMajor: os.flatMap(BatchValidator.osMajor)))
        let chosen = format ?? (isatty(STDOUT_FILENO) == 1 ? .table : .json)
        FileHandle.standardOutput.write(Data(StatsFormatter.render(rows, as: chosen).utf8))
    }
}

/// Reads counts from the database read-only (every key, or only the keys
/// admitted to the daemon's index); exit 66 when it is missing.
func openCounts(_ path: String, indexOnly: Bool = false) throws -> AggregateDelta {
    guard FileManager.default.fileExists(atPath: path) else {
        throw fail("database \(path) does not exist (set --database or KBTD_DATABASE)", code: ExitStatus.noInput)
    }
    do {
        let store = try SQLiteTelemetryStore(path: path, access: .readOnly)
        return try indexOnly ? store.loadIndexCounts() : store.loadCounts()
    } catch {
        throw fail("cannot read database \(path): \(error)", code: ExitStatus.noInput)
    }
}
