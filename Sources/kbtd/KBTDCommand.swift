import ArgumentParser
import Foundation
import KBTDCore
import KBTDPostgres
import KBTDServer
import KBTDStore
import Logging

/// `kbtd`: the keyboard telemetry daemon and its offline tools.
@main
struct KBTDCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kbtd",
        abstract: "Keyboard telemetry daemon: ingests keyboard measurements, serves fallback heights.",
        version: kbtdVersionLine,
        subcommands: [Serve.self, Stats.self, Height.self, Evaluate.self, Export.self, Report.self, Reload.self, Migrate.self,
                      Backup.self, Check.self])
}

/// Exit codes (sysexits.h; docs/command-line.md).
enum ExitStatus {
    static let usage: Int32 = 64
    /// The database is not a kbtd database (garbage, another application's, a newer schema).
    static let dataError: Int32 = 65
    static let noInput: Int32 = 66
    /// `backup`: reading the database or writing the copy failed midway (no copy is left).
    static let ioError: Int32 = 74
    /// A listen address cannot be bound (in use, not permitted).
    static let unavailable: Int32 = 69
    /// The database cannot be created (a directory, a missing or read-only folder).
    static let cannotCreate: Int32 = 73
    /// Another kbtd holds the database or the Unix socket.
    static let tempFail: Int32 = 75
    static let software: Int32 = 70
    static let config: Int32 = 78
}

/// Prints `kbtd: message` on stderr and exits with `code`. Under systemd (a bad
/// config at start, a rejected `ExecReload=`) the line is marked error priority.
func fail(_ message: String, code: Int32) -> ExitCode {
    let priority = JournalLogHandler.stderrIsJournal() ? "<3>" : ""
    FileHandle.standardError.write(Data("\(priority)kbtd: \(message)\n".utf8))
    return ExitCode(code)
}

/// The database path for the offline commands: flag > KBTD_DATABASE > config file > default.
func resolveSettings(config: String?, flags: [String: String]) throws -> ServerSettings {
    do {
        let environment = ProcessInfo.processInfo.environment
        return try SettingsLoader.load(configFile: config ?? environment["KBTD_CONFIG"], environment: environment, flags: flags)
    } catch {
        throw fail(error.description, code: ExitStatus.config)
    }
}

/// Opens the database read-only (`StoreLocation.offlineReader`); exit 66 when it is missing or
/// unreadable, 78 for a PostgreSQL URL that does not parse (the message has no password).
func openStore(_ path: String) async throws -> any TelemetryReader {
    do {
        return try await StoreLocation(database: path).offlineReader()
    } catch {
        switch error {
        case .badURL(let why): throw fail("database (a PostgreSQL URL): \(why)", code: ExitStatus.config)
        case .missing(let path): throw fail("database \(path) does not exist (set --database or KBTD_DATABASE)", code: ExitStatus.noInput)
        case .unreadable(let why): throw fail("cannot read database \(why)", code: ExitStatus.noInput)
        }
    }
}

/// The settings and the height index the daemon would answer from: only keys
/// admitted to its index (`height`, `evaluate`, `export`); exit 66 as `openStore`.
func loadIndex(config: String?, database: String?) async throws -> (ServerSettings, HeightIndex) {
    var flags: [String: String] = [:]
    if let database { flags["database"] = database }
    let settings = try resolveSettings(config: config, flags: flags)
    let store = try await openStore(settings.database)
    var index = HeightIndex()
    do {
        index.apply(try await store.loadIndexCounts())
    } catch {
        throw fail("cannot read database \(loggableDatabase(settings.database)): \(error)", code: ExitStatus.noInput)
    }
    return (settings, index)
}

/// `--os` of `stats` and `evaluate`: a version like 26 or 26.1.
func validateOSOption(_ os: String?) throws {
    if let os, FieldRules.osMajor(os) == nil {
        throw ValidationError("--os must be a version like 26 or 26.1, got '\(os)'")
    }
}
