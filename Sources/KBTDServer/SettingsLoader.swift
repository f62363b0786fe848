import Foundation
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
    /// Every key, for unknown-key checks and the default file.
    public static let keys: [String] = [
        "listen", "unix_socket", "database", "log_level", "admin_token", "ingest_tokens",
        "max_compressed_bytes", "max_decompressed_bytes", "max_samples_per_batch",
        "write_queue_capacity", "max_batches_per_commit", "retry_after_seconds", "idle_timeout_seconds",
        "header_timeout_seconds", "body_timeout_seconds", "max_connections",
        "rate_limit_per_second", "rate_limit_burst", "rate_limit_local_peers",
        "trusted_peers", "max_votes_per_source", "min_sources",
        "min_samples", "default_height_portrait", "default_height_landscape",
        "cache_max_age_seconds", "batch_retention_days",
        "max_connections_per_client", "max_vote_entries_per_source", "max_keys", "max_indexed_keys",
        "max_languages_per_model", "max_new_keys_per_source_per_day", "unconfirmed_key_retention_days",
        "unix_socket_mode", "database_mode", "max_wal_bytes",
        "index_catch_up_seconds", "database_pool_size", "database_wait_seconds", "database_password_file",
    ]

    /// One value and where it came from, for error messages.
    struct Value {
        var text: String
        var origin: String
    }

    /// Loads settings. `flags` holds command-line values under the same keys.
    public static func load(configFile: String?, environment: [String: String], flags: [String: String]) throws(SettingsError) -> ServerSettings {
        var values: [String: Value] = [:]
        if let configFile {
            for (key, value) in try parseFile(configFile) { values[key] = value }
        }
        for key in keys {
            let variable = "KBTD_" + key.uppercased()
            if let text = environment[variable] { values[key] = Value(text: text, origin: "environment variable \(variable)") }
        }
        for (key, text) in flags {
            values[key] = Value(text: text, origin: "flag --\(key.replacingOccurrences(of: "_", with: "-"))")
        }
        return try apply(values)
    }

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
            guard keys.contains(key) else {
                throw SettingsError(message: "\(origin): unknown key '\(key)' in config file \(path)")
            }
            values[key] = Value(text: value, origin: "config file \(origin)")
        }
        return values
    }

    static func apply(_ values: [String: Value]) throws(SettingsError) -> ServerSettings {
        var settings = ServerSettings()
        func bad(_ key: String, _ rule: String) -> SettingsError {
            let value = values[key]!
            return SettingsError(message: "\(key) = '\(value.text.prefix(80))' from \(value.origin): \(rule)")
        }
        func int(_ key: String, _ range: ClosedRange<Int>) throws(SettingsError) -> Int? {
            guard let value = values[key] else { return nil }
            guard let number = Int(value.text), range.contains(number) else {
                throw bad(key, "must be an integer in \(range.lowerBound)...\(range.upperBound)")
            }
            return number
        }
        func double(_ key: String, _ range: ClosedRange<Double>) throws(SettingsError) -> Double? {
            guard let value = values[key] else { return nil }
            guard let number = Double(value.text), number.isFinite, range.contains(number) else {
                throw bad(key, "must be a number in \(range.lowerBound)...\(range.upperBound)")
            }
            return number
        }

        if let listen = values["listen"] {
            let parts = listen.text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            var addresses: [ListenAddress] = []
            for part in parts {
                guard let address = ListenAddress(parsing: part) else { throw bad("listen", "must be HOST:PORT[,HOST:PORT...]") }
                addresses.append(address)
            }
            settings.listen = addresses
        }
        if let unix = values["unix_socket"], !unix.text.isEmpty { settings.unixSocket = unix.text }
        if let database = values["database"] {
            guard !database.text.isEmpty else { throw bad("database", "must be a file path or a postgres:// URL") }
            // Not `bad`: it would echo the value, and a URL may hold a password.
            if let problem = PostgresSettings.problem(database.text) {
                throw SettingsError(message: "database (a PostgreSQL URL) from \(database.origin): \(problem)")
            }
            settings.database = database.text
        }
        if let level = values["log_level"] {
            guard let parsed = Logger.Level(rawValue: level.text.lowercased()) else {
                throw bad("log_level", "must be one of trace, debug, info, notice, warning, error, critical")
            }
            settings.logLevel = parsed
        }
        if let token = values["admin_token"], !token.text.isEmpty { settings.adminToken = token.text }
        if let v = try int("max_compressed_bytes", 1_024...(1 << 30)) { settings.limits.maxCompressedBytes = v }
        if let v = try int("max_decompressed_bytes", 1_024...(1 << 30)) { settings.limits.maxDecompressedBytes = v }
        if let v = try int("max_samples_per_batch", 1...1_000_000) { settings.limits.maxSamplesPerBatch = v }
        if let v = try int("write_queue_capacity", 1...1_000_000) { settings.limits.writeQueueCapacity = v }
        if let v = try int("max_batches_per_commit", 1...100_000) { settings.limits.maxBatchesPerCommit = v }
        if let v = try int("retry_after_seconds", 1...3600) { settings.limits.retryAfterSeconds = v }
        if let v = try int("idle_timeout_seconds", 1...86_400) { settings.limits.idleTimeoutSeconds = v }
        if let v = try int("header_timeout_seconds", 1...3600) { settings.limits.headerTimeoutSeconds = v }
        if let v = try int("body_timeout_seconds", 1...3600) { settings.limits.bodyTimeoutSeconds = v }
        if let v = try int("max_connections", 1...1_000_000) { settings.limits.maxConnections = v }
        if let v = try double("rate_limit_per_second", 0...1_000_000) { settings.limits.ingestRatePerSecond = v }
        if let v = try double("rate_limit_burst", 1...1_000_000) { settings.limits.ingestBurst = v }
        if let value = values["rate_limit_local_peers"] {
            switch value.text.lowercased() {
            case "true", "yes", "1": settings.limits.rateLimitLocalPeers = true
            case "false", "no", "0": settings.limits.rateLimitLocalPeers = false
            default: throw bad("rate_limit_local_peers", "must be true or false")
            }
        }
        if let value = values["trusted_peers"] {
            guard let parsed = TrustedPeers(rawValue: value.text.lowercased()) else {
                throw bad("trusted_peers", "must be local, unix or none")
            }
            settings.trustedPeers = parsed
        }
        if let v = try int("max_votes_per_source", 1...1_000_000) { settings.maxVotesPerSource = v }
        if let v = try int("min_sources", 1...8) { settings.estimator.minSources = v }
        if let tokens = values["ingest_tokens"] {
            settings.ingestTokens = tokens.text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty }
        }
        if let v = try int("min_samples", 1...1_000_000) { settings.estimator.minSamples = Int64(v) }
        if let v = try double("default_height_portrait", 0...2000) { settings.estimator.defaultPortraitHeight = v }
        if let v = try double("default_height_landscape", 0...2000) { settings.estimator.defaultLandscapeHeight = v }
        if let v = try int("cache_max_age_seconds", 0...31_536_000) { settings.cacheMaxAge = v }
        if let v = try double("batch_retention_days", 0.001...3650) { settings.batchRetentionDays = v }
        if let v = try int("max_connections_per_client", 1...1_000_000) { settings.limits.maxConnectionsPerClient = v }
        if let v = try int("max_vote_entries_per_source", 1...10_000_000) { settings.maxVoteEntriesPerSource = v }
        if let v = try int("max_keys", 1...100_000_000) { settings.keys.maxKeys = v }
        if let v = try int("max_indexed_keys", 1...100_000_000) { settings.maxIndexedKeys = v }
        if let v = try int("max_languages_per_model", 1...100_000) { settings.keys.maxLanguagesPerModel = v }
        if let v = try int("max_new_keys_per_source_per_day", 0...100_000_000) { settings.keys.maxNewKeysPerSourcePerDay = v }
        if let v = try double("unconfirmed_key_retention_days", 0...3650) { settings.unconfirmedKeyRetentionDays = v }
        func mode(_ key: String) throws(SettingsError) -> UInt32? {
            guard let value = values[key] else { return nil }
            guard let parsed = UInt32(value.text, radix: 8), parsed <= 0o777 else {
                throw bad(key, "must be an octal file mode such as 0660")
            }
            return parsed
        }
        if let v = try mode("unix_socket_mode") { settings.unixSocketMode = v }
        if let v = try mode("database_mode") { settings.databaseMode = v }
        if let v = try int("max_wal_bytes", 65_536...(1 << 40)) { settings.maxWALBytes = Int64(v) }
        if let v = try double("index_catch_up_seconds", 0.01...3600) { settings.postgres.indexCatchUpSeconds = v }
        if let v = try int("database_pool_size", 2...1000) { settings.postgres.poolSize = v }
        if let v = try double("database_wait_seconds", 0...86_400) { settings.postgres.connectWaitSeconds = v }
        if let file = values["database_password_file"], !file.text.isEmpty { settings.postgres.passwordFile = file.text }
        if settings.listen.isEmpty && settings.unixSocket == nil {
            throw SettingsError(message: "nothing to listen on: set listen or unix_socket")
        }
        return settings
    }
}
