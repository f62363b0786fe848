import ArgumentParser
import CMalloc
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
        Self.fixMallocMmapThreshold(environment: ProcessInfo.processInfo.environment)
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
        logger.notice("kbtd \(kbtdVersionLine) starting", metadata: ["database": "\(loggableDatabase(settings.database))",
                                                                  "config": "\(configFile ?? "(built-in defaults)")"])
        let environment = ProcessInfo.processInfo.environment
        for warning in SettingsLoader.unknownVariables(in: environment) { logger.warning("\(warning)") }
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

    /// glibc raises its mmap threshold (up to 32 MiB) whenever a large block is freed, so the
    /// index's arrays, grown by copying as keys arrive, end up on the heap, and the copies they
    /// leave behind stay resident: about 14 MiB of 105 at 100,000 keys (BENCHMARKS.md, "Memory
    /// by key count"). A fixed 256 KiB threshold keeps large blocks on their own mappings, returned to
    /// the system when freed. An operator's `GLIBC_TUNABLES` wins.
    static func fixMallocMmapThreshold(environment: [String: String]) {
        guard environment["GLIBC_TUNABLES"] == nil else { return }
        _ = kbtd_set_mmap_threshold(256 * 1024)
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
