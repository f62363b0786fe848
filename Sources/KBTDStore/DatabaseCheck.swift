import CSQLite
import Foundation

/// What `kbtd check` finds in an SQLite file: whether it is a kbtd database this kbtd can serve,
/// whether SQLite finds it sound, and what it holds. Read-only: it never creates, migrates or
/// repairs anything, so it is safe on a live database and on a backup.
///
/// `PRAGMA integrity_check`, not `quick_check`: besides every page and record it checks that
/// each index holds exactly its table's rows (the counts tables are indexes, `WITHOUT ROWID`),
/// which is what a restore must be sure of; it reads the whole file once.
///
///     let check = try DatabaseCheck(path: "/backup/kbtd.sqlite")
///     if check.verdict != .sound { print(check.problems) }
public struct DatabaseCheck: Sendable {
    public enum Verdict: String, Sendable {
        case sound
        /// SQLite found damage (integrity_check's messages in `problems`).
        case corrupt
        /// Not SQLite, another application's file, or SQLite without kbtd's schema.
        case notKbtd = "not_kbtd"
        /// Written by a newer kbtd: this one cannot serve it.
        case newerSchema = "newer_schema"
    }

    /// The file does not exist.
    public struct Missing: Error, Sendable { public var path: String }

    public var path: String
    public var verdict = Verdict.sound
    /// The highest applied migration (nil when none could be read).
    public var schemaVersion: Int?
    /// The highest this kbtd knows.
    public var supportedVersion = Schema.latestVersion
    /// Why the verdict is not `sound`: integrity_check's first messages, or the reason.
    public var problems: [String] = []
    /// What the database holds, by name, in a fixed order (`counted`).
    public var counts: [(name: String, value: Int64)] = []
    public var bytes: Int64 = 0

    /// At most this many integrity_check messages are kept.
    public static let maxProblems = 20

    /// The counts and the query of each: a table missing from an older schema is left out.
    static let counted: [(name: String, table: String, sql: String)] = [
        ("keys", "keys", "SELECT COUNT(*) FROM keys"),
        ("indexed_keys", "keys", "SELECT COUNT(*) FROM keys WHERE admitted_at IS NOT NULL"),
        ("samples", "animation_counts", "SELECT COALESCE(SUM(count), 0) FROM animation_counts"),
        ("height_rows", "height_counts", "SELECT COUNT(*) FROM height_counts"),
        ("batch_ids", "batches", "SELECT COUNT(*) FROM batches"),
        ("last_batch_at", "batches", "SELECT COALESCE(MAX(received_at), 0) FROM batches"),
        ("os_releases", "release_counts", "SELECT COUNT(*) FROM (SELECT DISTINCT os_major, os_minor FROM release_counts)"),
        ("screens", "model_screens", "SELECT COUNT(*) FROM model_screens"),
    ]

    /// Checks the file at `path`.
    public init(path: String) throws(Missing) {
        self.path = path
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { throw Missing(path: path) }
        bytes = Int64(info.st_size)
        let connection: SQLiteConnection
        do {
            connection = try Self.open(path)
        } catch {
            fail(error.code & 0xFF == SQLITE_NOTADB ? .notKbtd : .corrupt,
                 error.code & 0xFF == SQLITE_NOTADB ? "not an SQLite database (or its header is damaged)" : error.description)
            return
        }
        do {
            try connection.execute("BEGIN;")
            defer { try? connection.execute("COMMIT;") }
            guard try identify(connection) else { return }
            try connection.prepare("PRAGMA integrity_check(\(Self.maxProblems))").forEachRow { row in
                let message = row.text(0)
                if message != "ok" { problems.append(message) }
            }
            if !problems.isEmpty {
                verdict = .corrupt
                return
            }
            try count(connection)
        } catch {
            let primary = error.code & 0xFF
            fail(primary == SQLITE_NOTADB ? .notKbtd : .corrupt, error.description)
        }
    }

    private mutating func fail(_ verdict: Verdict, _ problem: String) {
        self.verdict = verdict
        problems.append(problem)
    }

    /// Reads the application id and the schema version; false when the file is not kbtd's.
    private mutating func identify(_ connection: SQLiteConnection) throws(SQLiteError) -> Bool {
        var applicationID: Int64 = 0
        try connection.prepare("PRAGMA application_id").forEachRow { applicationID = $0.int(0) }
        if applicationID != 0, applicationID != Int64(Schema.applicationID) {
            fail(.notKbtd, "it belongs to another application (application_id \(applicationID))")
            return false
        }
        let version = try SQLiteBackup.schemaVersion(connection)
        guard version > 0 else {
            fail(.notKbtd, "no kbtd schema (no schema_migrations table)")
            return false
        }
        schemaVersion = version
        if version > supportedVersion {
            // Still checked for damage below; the verdict says this kbtd cannot serve it.
            verdict = .newerSchema
            problems.append("schema version \(version) is newer than this kbtd supports (\(supportedVersion)); upgrade kbtd")
        }
        return true
    }

    private mutating func count(_ connection: SQLiteConnection) throws(SQLiteError) {
        var tables = Set<String>()
        try connection.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").forEachRow { tables.insert($0.text(0)) }
        for entry in Self.counted where tables.contains(entry.table) {
            var value: Int64 = 0
            try connection.prepare(entry.sql).forEachRow { value = $0.int(0) }
            counts.append((entry.name, value))
        }
    }

    /// Read-only; a file in a folder this process cannot write (no shared-memory file for the
    /// log) is read as it is, like `kbtd stats` does.
    private static func open(_ path: String) throws(SQLiteError) -> SQLiteConnection {
        do {
            let connection = try SQLiteConnection(path: path, mode: .readOnly)
            try connection.execute("PRAGMA busy_timeout = 5000;")
            try connection.execute("SELECT 1 FROM sqlite_master LIMIT 1;")
            return connection
        } catch {
            guard error.code & 0xFF == SQLITE_CANTOPEN || error.code & 0xFF == SQLITE_READONLY else { throw error }
            return try SQLiteConnection(path: path, mode: .immutable)
        }
    }
}
