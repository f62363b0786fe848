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

    /// Variables kbtd reads that are not settings of `Setting.all`.
    static let otherVariables: Set<String> = [sourceKeyVariable, "KBTD_CONFIG", "KBTD_DATABASE_PASSWORD", "KBTD_DATABASE_PASSWORD_FILE"]

    /// One warning per `KBTD_*` variable in `environment` that kbtd does not read (a typo would
    /// otherwise be ignored without a word), with the closest setting's variable when one is near.
    public static func unknownVariables(in environment: [String: String]) -> [String] {
        let known = Set(Setting.all.map(\.environmentVariable)).union(otherVariables)
        return environment.keys.filter { $0.hasPrefix("KBTD_") && !known.contains($0) }.sorted().map { name in
            let hint = closest(to: name, among: Array(known)).map { " (did you mean \($0)?)" } ?? ""
            return "environment variable \(name) is not a kbtd setting and is ignored\(hint)"
        }
    }

    /// The candidate nearest `word` by edit distance, if it is within a third of the word's length
    /// (at least 2 edits): a typo, not another word.
    static func closest(to word: String, among candidates: [String]) -> String? {
        let limit = max(2, word.count / 3)
        let scored = candidates.map { ($0, editDistance(Array(word.lowercased().utf8), Array($0.lowercased().utf8))) }
        guard let best = scored.min(by: { $0.1 < $1.1 || ($0.1 == $1.1 && $0.0 < $1.0) }), best.1 <= limit else { return nil }
        return best.0
    }

    /// Levenshtein distance.
    static func editDistance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1] + Array(repeating: 0, count: b.count)
            for (j, y) in b.enumerated() {
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }

    /// Parses a config file into values; unknown keys and malformed lines are errors.
    static func parseFile(_ path: String) throws(SettingsError) -> [String: Value] {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw SettingsError(message: "cannot read config file \(path): it is a directory")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            // The reason, as the system gives it: no such file, permission denied, ...
            let file = fopen(path, "r")
            let reason = file == nil ? String(cString: strerror(errno)) : "unreadable"
            if let file { fclose(file) }
            throw SettingsError(message: "cannot read config file \(path): \(reason)")
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
                let hint = closest(to: key, among: keys).map { " (did you mean '\($0)'?)" } ?? ""
                throw SettingsError(message: "\(origin): unknown key '\(key)' in config file \(path)\(hint)")
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
