import Foundation
import KBTDServer
import Testing

@Suite("Settings", .ownThreads, .timeLimit(.minutes(10)))
struct SettingsTests {
    static let shippedConfig = TestPaths.repositoryRoot.appendingPathComponent("Config/kbtd.conf").path

    @Test func shippedConfigFileHoldsEveryKeyAtItsDefault() throws {
        let text = try String(contentsOfFile: Self.shippedConfig, encoding: .utf8)
        for key in SettingsLoader.keys {
            #expect(text.contains("\n\(key) ="), "Config/kbtd.conf lacks \(key)")
        }
        let loaded = try SettingsLoader.load(configFile: Self.shippedConfig, environment: [:], flags: [:])
        #expect(loaded == ServerSettings())
    }

    @Test func everyKeyInTheShippedFileIsCommentedAndKnown() throws {
        let lines = try String(contentsOfFile: Self.shippedConfig, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        var documented: [String] = []
        for (number, line) in lines.enumerated() where !line.hasPrefix("#") && line.contains("=") {
            let key = line.split(separator: "=")[0].trimmingCharacters(in: .whitespaces)
            documented.append(key)
            #expect(Setting.named(key) != nil, "Config/kbtd.conf:\(number + 1): \(key) is not a setting")
            // Each key follows its comment, or shares the one above a group (rate_limit_burst, default_height_landscape).
            let above = lines[..<number].last { !$0.isEmpty } ?? ""
            #expect(above.hasPrefix("#") || above.contains("="), "Config/kbtd.conf:\(number + 1): \(key) has no comment")
        }
        #expect(Set(documented) == Set(Setting.all.map(\.key)))
        #expect(documented.count == Setting.all.count, "each key once")
    }

    /// Each setting's shown default parses back to the default: the file, the
    /// variables and the reload diff all read the same text.
    @Test func everyDefaultRoundTripsThroughItsEnvironmentVariable() throws {
        for setting in Setting.all {
            let loaded = try SettingsLoader.load(configFile: nil, environment: [setting.environmentVariable: setting.defaultValue], flags: [:])
            #expect(loaded == ServerSettings(), "\(setting.key) = \(setting.defaultValue)")
        }
    }

    @Test func badValuesNameTheKeyAndWhereTheyCameFrom() {
        #expect(throws: SettingsError.self) { try SettingsLoader.load(configFile: nil, environment: ["KBTD_MAX_KEYS": "0"], flags: [:]) }
        do {
            _ = try SettingsLoader.load(configFile: nil, environment: ["KBTD_MAX_WAL_BYTES": "12"], flags: ["log_level": "loud"])
            Issue.record("accepted a bad value")
        } catch {
            // Checked in table order: log_level comes before max_wal_bytes.
            #expect(error.description == "log_level = 'loud' from flag --log-level: must be one of trace, debug, info, notice, warning, error, critical")
        }
    }

    /// The options the table names are the ones `kbtd serve` has, and errors name them.
    @Test func everyFlagInTheTableIsAServeOption() throws {
        let help = try runKBTD(["serve", "--help"])
        let flags = Setting.all.compactMap(\.flag)
        #expect(flags.count == 4)
        for flag in flags { #expect(help.stdout.contains("--\(flag) "), "kbtd serve has no --\(flag):\n\(help.stdout)") }
        do {
            _ = try SettingsLoader.load(configFile: nil, environment: [:], flags: ["unix_socket": "", "listen": ""])
            Issue.record("nothing to listen on was accepted")
        } catch {
            #expect(error.description == "nothing to listen on: set listen or unix_socket")
        }
        do {
            _ = try SettingsLoader.load(configFile: nil, environment: [:], flags: ["database": ""])
            Issue.record("an empty database was accepted")
        } catch {
            #expect(error.description == "database = '' from flag --database: must be a file path or a postgres:// URL")
        }
    }

    @Test func onlyRestartOnlyKeysAreReportedAsNeedingARestart() {
        var new = ServerSettings()
        new.limits.idleTimeoutSeconds = 5
        new.estimator.minSamples = 3
        new.databaseMode = 0o640
        #expect(Setting.changedRestartOnly(from: ServerSettings(), to: new) == ["idle_timeout_seconds", "database_mode"])
    }

    @Test func listenAddresses() {
        #expect(ListenAddress(parsing: "127.0.0.1:8420") == ListenAddress(host: "127.0.0.1", port: 8420))
        #expect(ListenAddress(parsing: "[::1]:9000") == ListenAddress(host: "::1", port: 9000))
        #expect(ListenAddress(parsing: ":8420") == ListenAddress(host: "0.0.0.0", port: 8420))
        #expect(ListenAddress(parsing: "localhost") == nil)
        #expect(ListenAddress(parsing: "h:70000") == nil)
    }
}
