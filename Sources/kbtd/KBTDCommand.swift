import ArgumentParser
import Foundation
import KBTDServer

/// `kbtd`: the keyboard telemetry daemon and its offline tools.
@main
struct KBTDCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kbtd",
        abstract: "Keyboard telemetry daemon: ingests keyboard measurements, serves fallback heights.",
        version: kbtdVersion,
        subcommands: [Serve.self, Stats.self, Height.self, Report.self])
}

let kbtdVersion = "0.1.0"

/// Exit codes (sysexits.h; docs/command-line.md).
enum ExitStatus {
    static let usage: Int32 = 64
    static let noInput: Int32 = 66
    static let software: Int32 = 70
    static let cantCreate: Int32 = 73
    static let config: Int32 = 78
}

/// Prints `kbtd: message` on stderr and exits with `code`.
func fail(_ message: String, code: Int32) -> ExitCode {
    FileHandle.standardError.write(Data("kbtd: \(message)\n".utf8))
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
