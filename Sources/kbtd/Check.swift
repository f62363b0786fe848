import ArgumentParser
import Foundation
import KBTDCore
import KBTDPostgres
import KBTDServer
import KBTDStore

/// `kbtd check [DB]`: is this file a sound kbtd database this kbtd can serve, and what does it hold
/// (`DatabaseCheck`). Exit 0 when sound, 65 when damaged or not a kbtd database, 66 when missing.
struct Check: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Verify an SQLite database or a backup read-only: integrity check, schema version, counts (exit 0 when sound).")

    enum Format: String, ExpressibleByArgument { case text, json }

    @Option(help: "SQLite database file (or give it as the argument). Default: KBTD_DATABASE, else kbtd.sqlite.")
    var database: String?
    @Option(help: "text or json.") var format = Format.text
    @Argument(help: "The database file to check.") var file: String?

    func validate() throws {
        if file != nil, database != nil { throw ValidationError("give the database either as the argument or with --database, not both") }
    }

    func run() async throws {
        var flags: [String: String] = [:]
        if let path = file ?? database { flags["database"] = path }
        let path = try resolveSettings(config: nil, flags: flags).database
        guard !PostgresURL.isURL(path) else {
            throw fail("kbtd check reads SQLite files; for PostgreSQL, pg_restore --list a dump, or run kbtd stats against the URL",
                       code: ExitStatus.usage)
        }
        let check: DatabaseCheck
        do {
            check = try DatabaseCheck(path: path)
        } catch {
            throw fail("database \(path) does not exist", code: ExitStatus.noInput)
        }
        switch format {
        case .json: print(Self.json(check).serialized())
        case .text: print(Self.text(check), terminator: "")
        }
        guard check.verdict == .sound else { throw fail("\(path) is not sound: \(check.verdict.rawValue)", code: ExitStatus.dataError) }
    }

    static func json(_ check: DatabaseCheck) -> JSONOutput {
        .object([
            ("database", .string(check.path)),
            ("verdict", .string(check.verdict.rawValue)),
            ("schema_version", check.schemaVersion.map { .int(Int64($0)) } ?? .null),
            ("supported_schema_version", .int(Int64(check.supportedVersion))),
            ("bytes", .int(check.bytes)),
            ("problems", .array(check.problems.map { .string($0) })),
            ("counts", .object(check.counts.map { ($0.name, .int($0.value)) })),
        ])
    }

    static func text(_ check: DatabaseCheck) -> String {
        var out = "database: \(check.path) (\(check.bytes) bytes)\n"
        out += "schema version: \(check.schemaVersion.map(String.init) ?? "-") (this kbtd: \(check.supportedVersion))\n"
        for count in check.counts { out += "\(count.name): \(count.value)\n" }
        for problem in check.problems { out += "problem: \(problem)\n" }
        let verdicts: [DatabaseCheck.Verdict: String] = [
            .sound: "sound (integrity_check ok)", .corrupt: "CORRUPT: restore from another backup",
            .notKbtd: "NOT A KBTD DATABASE", .newerSchema: "NEWER SCHEMA: this kbtd cannot serve it; upgrade kbtd",
        ]
        out += "verdict: \(verdicts[check.verdict] ?? check.verdict.rawValue)\n"
        return out
    }
}
