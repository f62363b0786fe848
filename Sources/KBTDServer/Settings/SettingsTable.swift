import KBTDCore
import Logging

extension Setting {
    /// Every setting `kbtd serve` reads, in the order values are checked (the
    /// first bad one is reported). The file loader, the `KBTD_*` variables, the
    /// reload and `SettingsTests` (Config/kbtd.conf documents each key at its
    /// default) all read this list: adding a setting is one entry here, one
    /// field in `ServerSettings` and its lines in Config/kbtd.conf.
    public static let all: [Setting] = [
        Setting("listen", "TCP address(es) to listen on, HOST:PORT [tls|plain] [proxy_protocol], comma-separated.", reloadable: false,
                flag: "listen", parse: { text, settings in
            let parts = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            var addresses: [ListenAddress] = []
            for part in parts {
                switch ListenAddress.parseEntry(part) {
                case .success(let address): addresses.append(address)
                case .failure(let error): return error.reason
                }
            }
            settings.listen = addresses
            return nil
        }, show: { $0.listen.map(\.entryText).joined(separator: ",") }),
        .optionalText("unix_socket", "Also listen on this Unix socket path (empty: none).", reloadable: false, flag: "unix", \.unixSocket),
        Setting("database", "SQLite database file, or a postgres:// URL (docs/scaling-out.md).", reloadable: false, flag: "database",
                parse: { text, settings in
            guard !text.isEmpty else { return "must be a file path or a postgres:// URL" }
            if let problem = PostgresSettings.problem(text) { return problem }
            settings.database = text
            return nil
        }, show: { $0.database }),
        Setting("log_level", "trace, debug, info, notice, warning, error or critical.", reloadable: true, flag: "log-level",
                parse: { text, settings in
            guard let parsed = Logger.Level(rawValue: text.lowercased()) else {
                return "must be one of trace, debug, info, notice, warning, error, critical"
            }
            settings.logLevel = parsed
            return nil
        }, show: { $0.logLevel.rawValue }),
        .optionalText("admin_token", "Bearer token that lets non-local peers read the operations endpoints.", reloadable: true, \.adminToken),
        .int("max_compressed_bytes", "Largest request body on the wire, bytes.", reloadable: true, 1_024...(1 << 30),
             \.limits.maxCompressedBytes),
        .int("max_decompressed_bytes", "Largest body after inflating, bytes.", reloadable: true, 1_024...(1 << 30),
             \.limits.maxDecompressedBytes),
        .int("body_budget_bytes", "What all request bodies in flight may hold together, bytes (a quarter per client network, half per group).",
             reloadable: true, 65_536...(1 << 40), \.limits.bodyBudgetBytes),
        .int("max_samples_per_batch", "Most samples one batch may hold.", reloadable: true, 1...1_000_000, \.limits.maxSamplesPerBatch),
        .int("write_queue_capacity", "Batches waiting for a commit before ingest answers 503.", reloadable: true, 1...1_000_000,
             \.limits.writeQueueCapacity),
        .int("max_batches_per_commit", "Most batches one transaction holds.", reloadable: false, 1...100_000,
             \.limits.maxBatchesPerCommit),
        .int("retry_after_seconds", "Retry-After on 503 and 429, seconds.", reloadable: true, 1...3600, \.limits.retryAfterSeconds),
        .int("shutdown_delay_seconds", "Seconds between SIGTERM and closing the listeners, with /readyz answering 503 (0: none).",
             reloadable: true, 0...3600, \.shutdownDelaySeconds),
        .int("idle_timeout_seconds", "Idle keep-alive connections are closed after this many seconds.", reloadable: false, 1...86_400,
             \.limits.idleTimeoutSeconds),
        .int("header_timeout_seconds", "Seconds a new connection has to send its request head.", reloadable: false, 1...3600,
             \.limits.headerTimeoutSeconds),
        .int("body_timeout_seconds", "Seconds the whole body has once the head is in.", reloadable: false, 1...3600,
             \.limits.bodyTimeoutSeconds),
        .int("max_connections", "Concurrent connections across all listeners.", reloadable: true, 1...1_000_000, \.limits.maxConnections),
        .double("rate_limit_per_second", "Ingest batches per second per client address (0: off).", reloadable: true, 0...1_000_000,
                \.limits.ingestRatePerSecond),
        .double("rate_limit_burst", "Ingest burst per client address.", reloadable: true, 1...1_000_000, \.limits.ingestBurst),
        .bool("rate_limit_local_peers", "Rate limit loopback and Unix-socket peers too.", reloadable: true, \.limits.rateLimitLocalPeers),
        Setting("trusted_peers", "Peers whose batches count in full: local, unix or none.", reloadable: true, parse: { text, settings in
            guard let parsed = TrustedPeers(rawValue: text.lowercased()) else { return "must be local, unix or none" }
            settings.trustedPeers = parsed
            return nil
        }, show: { $0.trustedPeers.rawValue }),
        .int("max_votes_per_source", "Votes one untrusted network may add per key and height bin per day.", reloadable: true,
             1...1_000_000, \.maxVotesPerSource),
        .int("min_sources", "Distinct client networks a level needs before it answers.", reloadable: true, 1...8, \.estimator.minSources),
        .int("vote_horizon_days", "Days of the latest data whose votes may outvote a key's all-time votes (0: votes never age).",
             reloadable: true, 0...HeightIndex.dayVoteDaysKept, \.estimator.voteHorizonDays),
        Setting("ingest_tokens", "Comma-separated bearer tokens POST /v1/batches requires (empty: none).", reloadable: true,
                parse: { text, settings in
                    settings.ingestTokens = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
                    return nil
                }, show: { $0.ingestTokens.joined(separator: ",") }),
        Setting("min_samples", "Docked samples a level of the fallback chain needs before it answers.", reloadable: true,
                parse: { text, settings in
                    guard let number = Int(text), (1...1_000_000).contains(number) else { return "must be an integer in 1...1000000" }
                    settings.estimator.minSamples = Int64(number)
                    return nil
                }, show: { String($0.estimator.minSamples) }),
        .double("default_height_portrait", "Portrait height served when nothing is known, points.", reloadable: true, 0...2000,
                \.estimator.defaultPortraitHeight),
        .double("default_height_landscape", "Landscape height served when nothing is known, points.", reloadable: true, 0...2000,
                \.estimator.defaultLandscapeHeight),
        .int("cache_max_age_seconds", "Cache-Control max-age of height answers, seconds.", reloadable: true, 0...31_536_000, \.cacheMaxAge),
        .int("answer_cache_bytes", "Bytes of rendered height answers each answer cache holds.", reloadable: false,
             65_536...(1 << 32), \.answerCacheBytes),
        .double("batch_retention_days", "Days seen batch ids are remembered.", reloadable: false, 0.001...3650, \.batchRetentionDays),
        .int("max_connections_per_client", "Concurrent TCP connections from one client address.", reloadable: true, 1...1_000_000,
             \.limits.maxConnectionsPerClient),
        .int("max_vote_entries_per_source", "Vote-ledger entries one untrusted network may open per day.", reloadable: true,
             1...10_000_000, \.maxVoteEntriesPerSource),
        .int("max_keys", "Distinct keys stored, answering or not.", reloadable: true, 1...100_000_000, \.keys.maxKeys),
        .int("max_indexed_keys", "Most keys the in-memory index holds.", reloadable: true, 1...100_000_000, \.maxIndexedKeys),
        .int("max_languages_per_model", "Distinct languages one model may have.", reloadable: true, 1...100_000,
             \.keys.maxLanguagesPerModel),
        .int("max_new_keys_per_source_per_day", "New keys one untrusted network may create per UTC day.", reloadable: true,
             0...100_000_000, \.keys.maxNewKeysPerSourcePerDay),
        .double("unconfirmed_key_retention_days", "Days an unconfirmed key is kept (0: forever).", reloadable: false, 0...3650,
                \.unconfirmedKeyRetentionDays),
        .double("source_retention_days", "Days a client network's keyed hash is kept per key after its last report.",
                reloadable: false, 1...3650, \.sourceRetentionDays),
        .optionalText("source_key_file", "File with the secret client networks are hashed under (empty: source.key beside the database).",
                      reloadable: false, \.sourceKeyFile),
        .double("idle_key_retention_days", "Days a key without trusted data is kept after it was last reported (0: forever).",
                reloadable: false, 0...3650, \.idleKeyRetentionDays),
        .int("max_new_keys_per_group_per_day", "New keys the untrusted networks of one IPv4 /16 or IPv6 /48 may create per UTC day.",
             reloadable: true, 0...100_000_000, \.keys.maxNewKeysPerGroupPerDay),
        .int("untrusted_key_share", "Percent of max_keys untrusted networks may fill on their own.", reloadable: true, 0...100,
             \.keys.untrustedKeyShare),
        .fileMode("unix_socket_mode", "Permissions of the Unix socket (octal).", reloadable: false, \.unixSocketMode),
        .fileMode("database_mode", "Permissions of a database file kbtd creates (octal).", reloadable: false, \.databaseMode),
        Setting("max_wal_bytes", "Bytes the write-ahead log is truncated back to.", reloadable: false, parse: { text, settings in
            guard let number = Int(text), (65_536...(1 << 40)).contains(number) else { return "must be an integer in 65536...1099511627776" }
            settings.maxWALBytes = Int64(number)
            return nil
        }, show: { String($0.maxWALBytes) }),
        .optionalText("database_password_file", "PostgreSQL: a file whose first line is the password.", reloadable: false,
                      \.postgres.passwordFile),
        .int("database_pool_size", "PostgreSQL: connections in this node's pool.", reloadable: false, 2...1000, \.postgres.poolSize),
        .double("database_wait_seconds", "PostgreSQL: seconds start-up waits for the server before exiting 69.", reloadable: false,
                0...86_400, \.postgres.connectWaitSeconds),
        .double("index_catch_up_seconds", "PostgreSQL: bound on how far the index lags other nodes' commits, seconds.",
                reloadable: false, 0.01...3600, \.postgres.indexCatchUpSeconds),
    ] + transport

    /// The setting named `key`, if there is one.
    public static func named(_ key: String) -> Setting? { byKey[key] }

    private static let byKey: [String: Setting] = Dictionary(uniqueKeysWithValues: all.map { ($0.key, $0) })

    /// The keys of `restartOnly` settings whose value differs between `old` and `new`.
    public static func changedRestartOnly(from old: ServerSettings, to new: ServerSettings) -> [String] {
        all.filter { !$0.reloadable && $0.show(old) != $0.show(new) }.map(\.key)
    }
}
