import Foundation
import KBTDPostgres
import KBTDCore
import Logging

/// A configuration fault: exit 78, naming the key and where it came from.
public struct SettingsError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var description: String { message }
}

/// Builds `ServerSettings` from, in rising precedence: built-in defaults, the
/// config file, `KBTD_*` environment variables, command-line flags.
///
/// The file is `key = value` lines with `#` comments (see `Config/kbtd.conf`);
/// every key has an environment twin: `max_samples_per_batch` is
/// `KBTD_MAX_SAMPLES_PER_BATCH`. Unknown keys and bad values are errors that
/// name the key and the file (and line) or variable.
public enum SettingsLoader {
    /// Every key (`Setting.all`), for unknown-key checks.
    public static var keys: [String] { Setting.all.map(\.key) }

    /// One value and where it came from, for error messages.
    struct Value {
        var text: String
        var origin: String
    }

    /// Loads settings. `flags` holds command-line values under the settings' keys
    /// (errors name the option, `Setting.flag`).
    public static func load(configFile: String?, environment: [String: String], flags: [String: String]) throws(SettingsError) -> ServerSettings {
        var values: [String: Value] = [:]
        if let configFile {
            for (key, value) in try parseFile(configFile) { values[key] = value }
        }
        for setting in Setting.all {
            let variable = setting.environmentVariable
            if let text = environment[variable] { values[setting.key] = Value(text: text, origin: "environment variable \(variable)") }
        }
        for (key, text) in flags {
            let flag = Setting.named(key)?.flag ?? key.replacingOccurrences(of: "_", with: "-")
            values[key] = Value(text: text, origin: "flag --\(flag)")
        }
        var settings = try apply(values)
        // The key itself only ever comes from the environment, and is never echoed.
        if let text = environment[sourceKeyVariable] {
            guard let key = SourceKey(hex: text) else {
                throw SettingsError(message: "environment variable \(sourceKeyVariable): must be 32 hexadecimal digits (value not shown)")
            }
            settings.sourceKey = key
        }
        return settings
    }

    /// The variable that gives the source key itself (`SourceKeyFile`).
    public static let sourceKeyVariable = "KBTD_SOURCE_KEY"

    /// Parses a config file into values; unknown keys and malformed lines are errors.
    static func parseFile(_ path: String) throws(SettingsError) -> [String: Value] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SettingsError(message: "cannot read config file \(path)")
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw SettingsError(message: "config file \(path) is not UTF-8")
        }
        var values: [String: Value] = [:]
        for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let origin = "\(path):\(number + 1)"
            guard let equals = line.firstIndex(of: "=") else {
                throw SettingsError(message: "\(origin): expected `key = value`, got \(line.prefix(80))")
            }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces)
            var value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            guard Setting.named(key) != nil else {
                throw SettingsError(message: "\(origin): unknown key '\(key)' in config file \(path)")
            }
            values[key] = Value(text: value, origin: "config file \(origin)")
        }
        return values
    }

    /// Applies `values` over the defaults in `Setting.all`'s order; the first bad one is the error.
    static func apply(_ values: [String: Value]) throws(SettingsError) -> ServerSettings {
        var settings = ServerSettings()
        for setting in Setting.all {
            guard let value = values[setting.key] else { continue }
            if let rule = setting.parse(value.text, &settings) {
                // A PostgreSQL URL may hold a password: never echo it.
                let shown = setting.key == "database" && PostgresURL.isURL(value.text) ? "(a PostgreSQL URL)" : String(value.text.prefix(80))
                throw SettingsError(message: "\(setting.key) = '\(shown)' from \(value.origin): \(rule)")
            }
        }
        if settings.listen.isEmpty && settings.unixSocket == nil {
            throw SettingsError(message: "nothing to listen on: set listen or unix_socket")
        }
        try Setting.checkTransport(settings) { values[$0]?.origin ?? "default" }
        return settings
    }
}
