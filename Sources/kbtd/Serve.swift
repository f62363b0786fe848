import ArgumentParser
import Foundation
import KBTDServer
import KBTDStore
import Logging

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the daemon in the foreground; logs go to stderr.")

    @Option(help: "Config file (key = value lines; see Config/kbtd.conf).")
    var config: String?

    @Option(help: "TCP address to listen on, HOST:PORT, optionally followed by tls, plain or proxy_protocol (repeatable). Default 127.0.0.1:8420.")
    var listen: [String] = []

    @Option(help: "Also listen on this Unix socket path.")
    var unix: String?

    @Option(help: "SQLite database file or postgres:// URL. Default kbtd.sqlite in the working directory.")
    var database: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel: String?

    func run() async throws {
        var flags: [String: String] = [:]
        if !listen.isEmpty { flags["listen"] = listen.joined(separator: ",") }
        if let unix { flags["unix_socket"] = unix }
        if let database { flags["database"] = database }
        if let logLevel { flags["log_level"] = logLevel }
        let settings = try resolveSettings(config: config, flags: flags)
        let configFile = config ?? ProcessInfo.processInfo.environment["KBTD_CONFIG"]

        let control = LogLevelControl(settings.logLevel)
        LoggingSystem.bootstrap { label in JournalLogHandler(label: label, control: control) }
        let logger = Logger(label: "kbtd")
        logger.notice("kbtd \(kbtdVersion) starting", metadata: ["database": "\(loggableDatabase(settings.database))",
                                                                  "config": "\(configFile ?? "(built-in defaults)")"])
        let environment = ProcessInfo.processInfo.environment
        let fixedFlags = flags
        let reload: @Sendable () throws -> ServerSettings = {
            try SettingsLoader.load(configFile: configFile, environment: environment, flags: fixedFlags)
        }
        do {
            try await Daemon(settings: settings, logger: logger, logLevel: control, reload: reload).run()
        } catch {
            let code = Self.exitCode(for: error)
            logger.critical("kbtd failed: \(error)", metadata: ["exit_code": "\(code)"])
            throw ExitCode(code)
        }
    }

    /// Documented exit codes (docs/command-line.md, "Exit codes"; sysexits.h) for what stops the daemon.
    static func exitCode(for error: any Error) -> Int32 {
        switch error {
        case UnusableDatabase.notKbtd, UnusableDatabase.newerSchema: ExitStatus.dataError
        case UnusableDatabase.cannotCreate: ExitStatus.cannotCreate
        case is AlreadyLocked: ExitStatus.tempFail
        case is CannotListen, is DatabaseUnreachable: ExitStatus.unavailable
        case is SettingsError: ExitStatus.config
        default: 1
        }
    }
}
