import ArgumentParser
import Foundation
import KBTDCore
import KBTDReport
import KBTDStore
import KBTDServer

extension StatsFormat: ExpressibleByArgument {}

struct Stats: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Report what kbtd knows per key, reading the database read-only (safe while the daemon runs).")

    @Option(help: "SQLite database file or postgres:// URL. Default: KBTD_DATABASE, else kbtd.sqlite.")
    var database: String?

    @Option(help: "Only this device model, e.g. iPhone17,1.")
    var model: String?

    @Option(help: "Only this keyboard language, e.g. ja-JP.")
    var language: String?

    @Option(help: "Only this OS major version (26 or 26.1).")
    var os: String?

    @Option(help: "table, json or csv. Default: table on a terminal, json otherwise.")
    var format: StatsFormat?

    func validate() throws { try validateOSOption(os) }

    func run() async throws {
        var flags: [String: String] = [:]
        if let database { flags["database"] = database }
        let path = try resolveSettings(config: nil, flags: flags).database
        let store = try await openStore(path)
        let filter = StatsFilter(model: model, language: language, osMajor: os.flatMap(FieldRules.osMajor))
        let chosen = format ?? (isatty(STDOUT_FILENO) == 1 ? .table : .json)
        let out = FileHandle.standardOutput
        do {
            // A page of keys at a time: memory stays flat however large the database.
            switch chosen {
            case .json:
                let totals = try await store.statsTotals(filter)
                out.write(Data(StatsFormatter.jsonOpening(keys: totals.keys, samples: totals.samples).utf8))
                var first = true
                _ = try await store.forEachPage(filter, after: nil, pageSize: 5_000, maxKeys: .max) { counts in
                    var text = ""
                    for row in StatsReport.rows(from: counts, filter: filter) {
                        if !first { text += "," }
                        first = false
                        StatsFormatter.json(row).write(to: &text)
                    }
                    out.write(Data(text.utf8))
                }
                out.write(Data((StatsFormatter.jsonClosing + "\n").utf8))
            case .csv:
                out.write(Data(StatsFormatter.csvHeader.utf8))
                _ = try await store.forEachPage(filter, after: nil, pageSize: 5_000, maxKeys: .max) { counts in
                    out.write(Data(StatsFormatter.csvRows(StatsReport.rows(from: counts, filter: filter)).utf8))
                }
            case .table:
                // Aligned columns need every row: a table is for a terminal, not for a million keys.
                var rows: [StatsRow] = []
                let more = try await store.forEachPage(filter, after: nil, pageSize: 5_000, maxKeys: 100_000) { counts in
                    rows += StatsReport.rows(from: counts, filter: filter)
                }
                out.write(Data(StatsFormatter.render(rows, as: .table).utf8))
                if more != nil { out.write(Data("(the first 100000 keys; --format csv or json lists them all)\n".utf8)) }
            }
        } catch {
            throw fail("cannot read database \(loggableDatabase(path)): \(error)", code: ExitStatus.noInput)
        }
    }
}
