import Foundation
import KBTDCore
import KBTDServer
@testable import KBTDStore
import Logging
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Phones' addresses must not be recoverable from kbtd's files (docs/privacy.md):
/// client networks are stored as keyed hashes under a secret kept beside the
/// database, retired after `source_retention_days`, and kept out of logs above debug.
@Suite("Privacy: keyed sources, retention, logs", .ownThreads, .timeLimit(.minutes(10)))
struct PrivacyTests {
    /// Loopback is a stranger here, so its batches are attributed to their client network.
    static let strangers = ["KBTD_TRUSTED_PEERS": "none", "KBTD_LOG_LEVEL": "info"]

    /// Client addresses the tests post from: several networks of 127.0.0.0/8, never 127.0.0.1
    /// (the daemon's own listening address appears in its log).
    static let clients = (2...13).map { "127.0.0.\($0)" } + ["127.1.2.3", "127.200.0.9", "127.255.255.254"]

    // MARK: SipHash

    /// The 64 vectors of the SipHash reference implementation (vectors.h): key 00 01 ... 0f,
    /// message i = bytes 00 ... i-1, each output in little-endian byte order.
    static let referenceVectors = [
        "310e0edd47db6f72", "fd67dc93c539f874", "5a4fa9d909806c0d", "2d7efbd796666785", "b7877127e09427cf", "8da699cd64557618",
        "cee3fe586e46c9cb", "37d1018bf50002ab", "6224939a79f5f593", "b0e4a90bdf82009e", "f3b9dd94c5bb5d7a", "a7ad6b22462fb3f4",
        "fbe50e86bc8f1e75", "903d84c02756ea14", "eef27a8e90ca23f7", "e545be4961ca29a1", "db9bc2577fcc2a3f", "9447be2cf5e99a69",
        "9cd38d96f0b3c14b", "bd6179a71dc96dbb", "98eea21af25cd6be", "c7673b2eb0cbf2d0", "883ea3e395675393", "c8ce5ccd8c030ca8",
        "94af49f6c650adb8", "eab8858ade92e1bc", "f315bb5bb835d817", "adcf6b0763612e2f", "a5c91da7acaa4dde", "716595876650a2a6",
        "28ef495c53a387ad", "42c341d8fa92d832", "ce7cf2722f512771", "e37859f94623f3a7", "381205bb1ab0e012", "ae97a10fd434e015",
        "b4a31508beff4d31", "81396229f0907902", "4d0cf49ee5d4dcca", "5c73336a76d8bf9a", "d0a704536ba93e0e", "925958fcd6420cad",
        "a915c29bc8067318", "952b79f3bc0aa6d4", "f21df2e41d4535f9", "87577519048f53a9", "10a56cf5dfcd9adb", "eb75095ccd986cd0",
        "51a9cb9ecba312e6", "96afadfc2ce666c7", "72fe52975a4364ee", "5a1645b276d592a1", "b274cb8ebf87870a", "6f9bb4203de7b381",
        "eaecb2a30b22a87f", "9924a43cc1315724", "bd838d3aafbf8db7", "0b1a2a3265d51aea", "135079a3231ce660", "932b2846e4d70666",
        "e1915f5cb1eca46c", "f325965ca16d629f", "575ff28e60381be5", "724506eb4c328a95",
    ]

    @Test func sipHashMatchesTheReferenceVectors() {
        let key = SourceKey(hex: "000102030405060708090a0b0c0d0e0f")!
        #expect(key == SourceKey(k0: 0x0706_0504_0302_0100, k1: 0x0f0e_0d0c_0b0a_0908))
        #expect(key.hex == "000102030405060708090a0b0c0d0e0f")
        for (length, expected) in Self.referenceVectors.enumerated() {
            let message = (0..<length).map { UInt8($0) }
            let hash = SipHash.hash(message, k0: key.k0, k1: key.k1)
            let littleEndian = (0..<8).map { i in
                let byte = UInt8(truncatingIfNeeded: hash >> UInt64(8 * i))
                return (byte < 16 ? "0" : "") + String(byte, radix: 16)
            }.joined()
            #expect(littleEndian == expected, "message of \(length) bytes")
        }
    }

    @Test func aSourceKeyNeverPrintsItselfAndSourceIDsDependOnIt() {
        let key = SourceKey.random()
        #expect(!"\(key)".contains(key.hex) && !String(reflecting: key).contains(key.hex))
        #expect(SourceKey(hex: "xyz") == nil && SourceKey(hex: String(repeating: "0", count: 31)) == nil)
        #expect(SourceKey(hex: " \(key.hex)\n") == key)
        let one = SourceID(network: "203.0.113.7", key: key)
        #expect(one == SourceID(network: "203.0.113.7", key: key))
        #expect(one != SourceID(network: "203.0.113.7", key: SourceKey.random()))
        #expect(one.isNetworkHash && !SourceID.trusted.isNetworkHash && !SourceID.retired().isNetworkHash)
        #expect(Int64(bitPattern: SourceID.retired().value) < 0)
    }

    // MARK: No address in the files

    /// Every stored `key_sources.source` of the SQLite file at `path`.
    static func storedSources(_ path: String) throws -> [Int64] {
        var values: [Int64] = []
        try SQLiteConnection(path: path, mode: .readOnly).prepare("SELECT source FROM key_sources").forEachRow { values.append($0.int(0)) }
        return values
    }

    /// The stored values among the unkeyed 64-bit FNV-1a hashes (as kbtd stored them before keyed
    /// sources, and with the top bit cleared) of every address of 127.0.0.0/8: what anyone holding the
    /// file could compute. The hash is computed byte by byte from shared prefixes, so all 2^24 take
    /// a few seconds in a debug build.
    static func unkeyedMatches(_ stored: [Int64]) -> [String] {
        let wanted = Set(stored.map { UInt64(bitPattern: $0) })
        let mask = UInt64(Int64.max)
        let prime: UInt64 = 0x0000_0100_0000_01B3
        let digits: [[UInt8]] = (0..<256).map { Array(String($0).utf8) }
        func fnv(_ hash: UInt64, _ bytes: [UInt8]) -> UInt64 {
            var hash = hash
            for byte in bytes { hash = (hash ^ UInt64(byte)) &* prime }
            return hash
        }
        var found: [String] = []
        let prefix = fnv(Fingerprint.offsetBasis, Array("127.".utf8))
        for b in 0..<256 {
            let hb = fnv(fnv(prefix, digits[b]), [UInt8(ascii: ".")])
            for c in 0..<256 {
                let hc = fnv(fnv(hb, digits[c]), [UInt8(ascii: ".")])
                for d in 0..<256 {
                    var hash = hc
                    for byte in digits[d] { hash = (hash ^ UInt64(byte)) &* prime }
                    if wanted.contains(hash) || wanted.contains(hash & mask) || wanted.contains(hash == 0 ? 1 : hash) {
                        found.append("127.\(b).\(c).\(d)")
                    }
                }
            }
        }
        return found
    }

    /// The database's files (the database, its WAL) as bytes, searched for text.
    static func filesContain(_ database: String, _ needles: [String]) -> [String] {
        var bytes = Data()
        for suffix in ["", "-wal", "-journal"] {
            if let data = FileManager.default.contents(atPath: database + suffix) { bytes += data }
        }
        return needles.filter { bytes.range(of: Data($0.utf8)) != nil }
    }

    /// Posts one batch from each client address, a language per address so no key fills its 8 sources.
    static func postFromEveryClient(_ daemon: TestDaemon, round: Int) throws {
        for (i, client) in clients.enumerated() {
            let response = try daemon.connection(from: client).request(
                "POST", "/v1/batches", headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")],
                body: gzip(batchBody(samples: shows(3, height: 336 + Double(round), language: ["en-US", "de-DE", "fr-FR"][i % 3]))))
            #expect(response.status == 202, "\(client): \(response.text)")
        }
    }

    @Test func storedSourcesAreKeyedAndTheSecretIsCreated0600AndKeptAcrossRestarts() throws {
        let daemon = TestDaemon(environment: Self.strangers)
        try daemon.start()
        try Self.postFromEveryClient(daemon, round: 0)
        #expect(daemon.stop() == 0)

        let keyFile = URL(fileURLWithPath: daemon.database).deletingLastPathComponent().appendingPathComponent("source.key").path
        var info = stat()
        #expect(stat(keyFile, &info) == 0 && info.st_mode & 0o777 == 0o600, "the key file is created 0600")
        let keyText = try String(contentsOfFile: keyFile, encoding: .utf8)
        let key = try #require(SourceKey(hex: keyText))
        let first = try Self.storedSources(daemon.database)
        #expect(first.count == Self.clients.count, "one source per client network")
        // Exactly the keyed hashes of the client networks: the key on disk is the key in use.
        #expect(Set(first) == Set(Self.clients.map { Int64(bitPattern: SourceID(network: $0, key: key).value) }))
        let firstLog = daemon.log_()

        // A restart reads the same key: the same networks have the same identities, nothing is added.
        try daemon.start()
        try Self.postFromEveryClient(daemon, round: 1)
        #expect(daemon.stop() == 0)
        #expect(try String(contentsOfFile: keyFile, encoding: .utf8) == keyText)
        let second = try Self.storedSources(daemon.database)
        #expect(Set(second) == Set(first) && second.count == first.count)

        // Nobody without the key can turn a stored value back into an address: no stored value is an
        // unkeyed hash of any address of 127.0.0.0/8, and no address is in the files as text.
        let start = ContinuousClock.now
        #expect(Self.unkeyedMatches(second).isEmpty)
        print("PrivacyTests: 2^24 unkeyed hashes checked in \(ContinuousClock.now - start)")
        #expect(Self.filesContain(daemon.database, Self.clients + [keyText.trimmingCharacters(in: .whitespacesAndNewlines)]).isEmpty)

        // The key is never logged, and no client address is logged at info.
        for log in [firstLog, daemon.log_()] {
            #expect(!log.contains(key.hex))
            for client in Self.clients { #expect(!log.contains(client), "\(client) in the info log") }
        }
        // Nothing address-derived in what operators read or ship.
        let stats = try runKBTD(["stats", "--database", daemon.database, "--format", "json"])
        let export = try runKBTD(["export", "--database", daemon.database])
        for output in [stats.stdout, export.stdout] {
            for value in second { #expect(!output.contains(String(value))) }
            #expect(!output.contains(key.hex))
        }
    }

    @Test func aKeyFileThatHoldsNoKeyStopsTheDaemonWithExit78() throws {
        let daemon = TestDaemon(environment: Self.strangers)
        let keyFile = daemon.directory.appendingPathComponent("source.key").path
        try "not a key\n".write(toFile: keyFile, atomically: true, encoding: .utf8)
        #expect(throws: (any Error).self) { try daemon.start() }
        #expect(daemon.waitForExit() == 78)
        #expect(daemon.log_().contains("source key file \(keyFile) does not hold a key"))
    }

    // MARK: PostgreSQL

    @Test(.enabled(if: TestPostgres.available, "PostgreSQL is not installed"))
    func nodesSharingAKeyAgreeOnSourceIdentities() throws {
        let postgres = try TestPostgres()
        let shared = SourceKey.random()
        func node(_ key: SourceKey) -> TestDaemon {
            TestDaemon(database: postgres.url, extraArguments: ["--log-level", "info"],
                       environment: Self.strangers.merging(["KBTD_SOURCE_KEY": key.hex, "KBTD_INDEX_CATCH_UP_SECONDS": "0.5"]) { $1 })
        }
        let nodes = [node(shared), node(shared), node(SourceKey.random())]
        for node in nodes { try node.start() }
        // One client network reports a different key to each node.
        for (node, language) in zip(nodes, ["en-US", "de-DE", "fr-FR"]) {
            let response = try node.connection(from: "127.0.0.5").request(
                "POST", "/v1/batches", headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")],
                body: gzip(batchBody(samples: shows(3, height: 336, language: language))))
            #expect(response.status == 202)
        }
        let rows = try postgres.psql("kbtd", "SELECT language || ' ' || source FROM key_sources ORDER BY language")
            .split(separator: "\n").map { $0.split(separator: " ") }
        var byLanguage: [String: Int64] = [:]
        for row in rows where row.count == 2 { byLanguage[String(row[0])] = Int64(row[1]) }
        let expected = Int64(bitPattern: SourceID(network: "127.0.0.5", key: shared).value)
        #expect(byLanguage["en-US"] == expected && byLanguage["de-DE"] == expected, "the same key, the same identity: \(rows)")
        #expect(byLanguage["fr-FR"] != nil && byLanguage["fr-FR"] != expected, "a node with another key disagrees")
        #expect(Self.unkeyedMatches(Array(byLanguage.values)).isEmpty)
        for node in nodes {
            #expect(node.stop() == 0)
            #expect(!node.log_().contains(shared.hex) && !node.log_().contains("127.0.0.5"))
        }
    }

    // MARK: Logs

    /// A client's address travels as `client` metadata, printed at debug and trace only.
    @Test func clientAddressesAreLoggedOnlyAtDebug() {
        let control = LogLevelControl(.trace)
        var handler = JournalLogHandler(label: "kbtd", control: control, toJournal: false)
        handler[metadataKey: "client"] = "198.51.100.23"
        func line(_ level: Logger.Level) -> String {
            handler.line(for: LogEvent(level: level, message: "answered", metadata: ["route": "/v1/batches"], source: nil,
                                       file: #fileID, function: #function, line: #line))
        }
        #expect(line(.debug).contains("client=198.51.100.23") && line(.trace).contains("198.51.100.23"))
        for level in [Logger.Level.info, .notice, .warning, .error, .critical] {
            #expect(!line(level).contains("198.51.100.23"), "\(level)")
            #expect(line(level).contains("route=/v1/batches"), "other metadata stays")
        }
    }

    /// Behind a trusted proxy the client named in `X-Forwarded-For` is logged at debug (the request
    /// log), and nowhere at info.
    @Test func theInfoLogOfADaemonBehindAProxyHoldsNoClientAddress() throws {
        let forwarded = "198.51.100.23"
        for level in ["info", "debug"] {
            let daemon = try TestDaemon(environment: Self.strangers.merging(
                ["KBTD_LOG_LEVEL": level, "KBTD_TRUSTED_PROXIES": "127.0.0.1"]) { $1 }).start()
            let response = try daemon.connection().request(
                "POST", "/v1/batches", headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip"),
                                                 ("X-Forwarded-For", forwarded)],
                body: gzip(batchBody(samples: shows(3, height: 336))))
            #expect(response.status == 202)
            _ = try daemon.connection(from: "127.0.0.77").request("GET", "/v1/height?model=iPhone17,1&language=en-US")
            _ = try daemon.connection(from: "127.0.0.77").request("GET", "/nowhere")
            #expect(daemon.stop() == 0)
            let log = daemon.log_()
            if level == "info" {
                #expect(!log.contains(forwarded) && !log.contains("127.0.0.77"), "\(log)")
            } else {
                #expect(log.contains(forwarded), "the debug request log names the client: the test can see it")
            }
        }
    }

    // MARK: Retention

    @Test func sourcesPastRetentionAreRetiredKeepingEachKeysCount() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("kbtd.sqlite").path
        let store = try SQLiteTelemetryStore(path: path)
        let key = SourceKey.random()
        func batch(_ id: String, network: String, at time: Int64, language: String = "en-US") -> PendingBatch {
            var delta = AggregateDelta()
            let device = Device(model: "iPhone17,1", os: "26.1", osMajor: 26)
            delta.add(Sample(t: 0, event: .show, language: language, orientation: .portrait, height: 336, duration: 0.25, curve: 7),
                      device: device)
            let source = network == "trusted" ? SourceID.trusted : SourceID(network: network, key: key)
            for series in delta.sources.keys { delta.sources[series] = [source] }
            var pending = PendingBatch(batchID: id, receivedAt: time, model: "iPhone17,1", os: "26.1", accepted: 1, rejected: 0,
                                       delta: delta)
            pending.source = source
            return pending
        }
        _ = try store.commit([batch("a", network: "198.51.100.1", at: 1_000), batch("b", network: "198.51.100.2", at: 1_000),
                              batch("t", network: "trusted", at: 1_000)])
        // The first network reports again later: its last-seen time moves on.
        _ = try store.commit([batch("c", network: "198.51.100.1", at: 5_000)])
        let before = try Self.storedSources(path)
        #expect(before.count == 3)

        #expect(try store.retireSources(seenBefore: 2_000) == 1, "only the network not seen since")
        let after = try Self.storedSources(path)
        #expect(after.count == 3, "the key keeps its count of sources")
        #expect(after.contains(0) && after.contains(Int64(bitPattern: SourceID(network: "198.51.100.1", key: key).value)))
        #expect(!after.contains(Int64(bitPattern: SourceID(network: "198.51.100.2", key: key).value)))
        #expect(after.filter { $0 < 0 }.count == 1, "the expired one is now a retired (negative) identifier")
        var nullSeen = 0
        try SQLiteConnection(path: path, mode: .readOnly)
            .prepare("SELECT COUNT(*) FROM key_sources WHERE seen_at IS NULL").forEachRow { nullSeen = Int($0.int(0)) }
        #expect(nullSeen == 2, "trusted and retired rows carry no time")

        #expect(try store.retireSources(seenBefore: 10_000) == 1)
        #expect(try Self.storedSources(path).filter { $0 > 0 }.isEmpty, "nothing address-derived is left")
        #expect(try store.retireSources(seenBefore: 10_000) == 0, "retired rows never expire again")
        #expect(try store.loadCounts().sources.values.first?.count == 3)
    }

    // MARK: The data inventory

    /// docs/privacy.md names every table and column kbtd stores (SQLite's schema read back from a
    /// fresh database, plus PostgreSQL's own bookkeeping tables).
    @Test func thePrivacyPageNamesEveryTableAndColumn() throws {
        let page = try String(contentsOf: TestPaths.repositoryRoot.appendingPathComponent("docs/privacy.md"), encoding: .utf8)
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("kbtd.sqlite").path
        _ = try SQLiteTelemetryStore(path: path)
        let db = try SQLiteConnection(path: path, mode: .readOnly)
        var tables: [String] = []
        try db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").forEachRow { tables.append($0.text(0)) }
        var columns: [String: [String]] = ["commit_log": ["id", "xid", "node", "created_at", "delta"],
                                           "imports": ["source", "imported_at", "batches", "samples"]]
        for table in tables {
            try db.prepare("SELECT name FROM pragma_table_info('\(table)')").forEachRow { columns[table, default: []].append($0.text(0)) }
        }
        #expect(tables.count >= 11)
        for (table, names) in columns {
            guard let row = page.split(separator: "\n").first(where: { $0.hasPrefix("| `\(table)`") }) else {
                Issue.record("docs/privacy.md has no row for table \(table)")
                continue
            }
            let keyColumns = ["model", "os_major", "language", "orientation", "keyboard_type"]
            for name in names where !(row.contains("the key") && keyColumns.contains(name)) {
                #expect(row.contains("`\(name)`"), "docs/privacy.md: \(table).\(name)")
            }
        }
    }

    // MARK: Migration

    @Test func aDatabaseOfTheEarlierSchemaKeepsEveryCountAndLosesItsAddressHashes() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("old.sqlite").path
        // Schema 5 as the previous release wrote it: sources are unkeyed FNV-1a hashes of addresses.
        let old = Self.clients.map { Int64(bitPattern: Fingerprint.of($0)) }
        try Self.makeVersion5Database(at: path, sources: old)
        let before = try SQLiteTelemetryStore(path: path, access: .readOnly).loadCounts()
        #expect(Self.unkeyedMatches(old).count == Self.clients.count, "the check finds the old hashes: it can see")

        let store = try SQLiteTelemetryStore(path: path)
        var after = try store.loadCounts()
        #expect(after.sources.mapValues(\.count) == before.sources.mapValues(\.count), "every key keeps its count of sources")
        #expect(after.sources.values.flatMap { $0 }.allSatisfy { !$0.isNetworkHash || $0 == .trusted })
        var withoutSources = before
        withoutSources.sources = [:]
        after.sources = [:]
        #expect(after == withoutSources, "every count is kept")
        #expect(Self.unkeyedMatches(try Self.storedSources(path)).isEmpty)
        var versions: [Int] = []
        try SQLiteConnection(path: path, mode: .readOnly).prepare("SELECT version FROM schema_migrations ORDER BY version")
            .forEachRow { versions.append(Int($0.int(0))) }
        #expect(versions == Array(1...Schema.latestVersion))
        #expect(try store.integrityCheck() == "ok")
    }

    /// A database exactly as kbtd with schema v5 left it: three keys, sources `sources` spread
    /// over them (plus a trusted one on the first).
    static func makeVersion5Database(at path: String, sources: [Int64]) throws {
        let db = try SQLiteConnection(path: path, mode: .readWrite)
        try db.execute("PRAGMA journal_mode = WAL;")
        try db.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL);")
        for migration in Schema.migrations where migration.version <= 5 {
            try db.execute(migration.sql)
            try db.execute("INSERT INTO schema_migrations VALUES (\(migration.version), '\(migration.name)', 0);")
        }
        let languages = ["en-US", "de-DE", "fr-FR"]
        var sql = ""
        for (i, language) in languages.enumerated() {
            sql += """
                INSERT INTO height_counts VALUES ('iPhone17,1', 26, '\(language)', 'portrait', 'default', 'docked', 336.0, \(25 + i));
                INSERT INTO height_votes VALUES ('iPhone17,1', 26, '\(language)', 'portrait', 'default', 336.0, \(20 + i));
                INSERT INTO animation_counts VALUES ('iPhone17,1', 26, '\(language)', 'portrait', 'default', 'show', 250, 7, \(25 + i));
                INSERT INTO keys VALUES ('iPhone17,1', 26, '\(language)', 'portrait', 'default', 1000, 1000);

                """
        }
        sql += "INSERT INTO key_sources VALUES ('iPhone17,1', 26, 'en-US', 'portrait', 'default', 0);\n"
        for (i, source) in sources.enumerated() {
            sql += "INSERT INTO key_sources VALUES ('iPhone17,1', 26, '\(languages[i % 3])', 'portrait', 'default', \(source));\n"
        }
        try db.execute(sql)
    }
}
