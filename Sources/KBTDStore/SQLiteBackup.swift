import CSQLite
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A consistent copy of a kbtd SQLite database, taken while a daemon writes it (`kbtd backup`).
///
/// SQLite's online backup API, not `VACUUM INTO`: it copies pages as they are, where VACUUM
/// re-inserts every row of every table and index (more CPU and memory on a machine the daemon
/// shares), and it copies in steps, with progress between them. Never a file copy: a live WAL
/// database is the main file *and* its log, and a copy of the two taken apart is torn.
///
/// The copy is one snapshot: the source connection opens a read transaction before the first
/// step and holds it to the last, so every step reads the same committed state (without it, a
/// commit by the daemon between two steps would restart the backup, forever under steady
/// ingest). In WAL mode a reader never blocks the writer; while it reads, the log cannot start
/// over, and the daemon truncates it soon after (docs/storage.md). Every batch acknowledged
/// before `copy` began is committed, so it is in the snapshot; a batch is one transaction's rows,
/// so none is in it partly.
///
///     let copied = try SQLiteBackup.copy(from: "/var/lib/kbtd/kbtd.sqlite", to: "/backup/kbtd.sqlite")
public enum SQLiteBackup {
    /// What a finished copy holds.
    public struct Copied: Sendable {
        public var pages: Int
        public var bytes: Int64
        /// The schema version of the snapshot.
        public var schemaVersion: Int
    }

    /// Why a copy was not made.
    public enum Failure: Error, CustomStringConvertible, Sendable {
        case sourceMissing(String)
        case destinationExists(String)
        case cannotCreate(String, String)
        case notKbtd(String)
        case sqlite(String)

        public var description: String {
            switch self {
            case .sourceMissing(let path): "database \(path) does not exist"
            case .destinationExists(let path): "\(path) already exists; kbtd backup never overwrites: choose a new name or remove it"
            case .cannotCreate(let path, let why): "cannot create \(path): \(why)"
            case .notKbtd(let why): why
            case .sqlite(let why): why
            }
        }
    }

    /// Pages one step copies: 4 MiB at SQLite's 4 KiB pages, between which `progress` is called.
    public static let pagesPerStep: Int32 = 1_024

    /// Copies the database at `source` into the new file `destination` (mode 0600), through a
    /// temporary file beside it renamed into place only when whole and synced: a failed or
    /// interrupted backup leaves no file at `destination`.
    ///
    /// - Parameter progress: called after each step with the pages copied and the pages in all.
    public static func copy(from source: String, to destination: String,
                            progress: (Int, Int) -> Void = { _, _ in }) throws(Failure) -> Copied {
        guard FileManager.default.fileExists(atPath: source) else { throw .sourceMissing(source) }
        guard !FileManager.default.fileExists(atPath: destination) else { throw .destinationExists(destination) }
        let partial = destination + ".partial"
        // O_EXCL: two backups to one name do not write one file.
        let fd = open(partial, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let why = String(cString: strerror(errno))
            throw .cannotCreate(destination, errno == EEXIST ? "\(partial) exists (another backup is writing it, or one was interrupted: remove it)" : why)
        }
        fchmod(fd, 0o600)
        close(fd)
        var done = false
        defer {
            if !done {
                for suffix in ["", "-journal", "-wal", "-shm"] { unlink(partial + suffix) }
            }
        }
        var copied = try backup(source, into: partial, progress: progress)
        do {
            // A copy is one file, no log beside it: the pages copied say WAL, so a new connection
            // opens it in WAL mode and switches it back (a daemon serving it switches to WAL again).
            let settle = try SQLiteConnection(path: partial, mode: .readWrite)
            try settle.execute("PRAGMA journal_mode = DELETE;")
        } catch {
            throw .sqlite("finishing \(partial): \(error)")
        }
        var info = stat()
        if stat(partial, &info) == 0 { copied.bytes = Int64(info.st_size) }
        let file = open(partial, O_RDONLY | O_CLOEXEC)
        if file >= 0 {
            fsync(file)
            close(file)
        }
        // link, not rename: a DEST created meanwhile is not replaced.
        guard link(partial, destination) == 0 else {
            throw errno == EEXIST ? .destinationExists(destination) : .cannotCreate(destination, String(cString: strerror(errno)))
        }
        done = true
        unlink(partial)
        syncFolder(of: destination)
        return copied
    }

    private static func backup(_ source: String, into partial: String, progress: (Int, Int) -> Void) throws(Failure) -> Copied {
        let from: SQLiteConnection, to: SQLiteConnection
        do {
            from = try SQLiteConnection(path: source, mode: .readOnly)
            try from.execute("PRAGMA busy_timeout = 5000;")
            to = try SQLiteConnection(path: partial, mode: .readWrite)
        } catch {
            throw .sqlite(error.description)
        }
        // The snapshot: the read transaction starts at the first read and lasts to COMMIT.
        let version: Int
        do {
            try from.execute("BEGIN;")
            version = try schemaVersion(from)
        } catch {
            if error.code & 0xFF == SQLITE_NOTADB { throw .notKbtd("\(source) is not an SQLite database") }
            throw .sqlite("reading \(source): \(error)")
        }
        guard version > 0 else { throw .notKbtd("\(source) is not a kbtd database (no schema_migrations table)") }
        defer { try? from.execute("COMMIT;") }
        guard let backup = sqlite3_backup_init(to.handle, "main", from.handle, "main") else {
            throw .sqlite("starting the backup: \(String(cString: sqlite3_errmsg(to.handle)))")
        }
        var status: Int32
        repeat {
            status = sqlite3_backup_step(backup, pagesPerStep)
            let total = Int(sqlite3_backup_pagecount(backup))
            progress(total - Int(sqlite3_backup_remaining(backup)), total)
            // BUSY/LOCKED: the destination is briefly locked by someone else; try again.
            if status == SQLITE_BUSY || status == SQLITE_LOCKED { usleep(10_000) }
        } while status == SQLITE_OK || status == SQLITE_BUSY || status == SQLITE_LOCKED
        let pages = Int(sqlite3_backup_pagecount(backup))
        sqlite3_backup_finish(backup)
        guard status == SQLITE_DONE else {
            throw .sqlite("copying \(source): \(String(cString: sqlite3_errmsg(to.handle))) (SQLite code \(status))")
        }
        return Copied(pages: pages, bytes: 0, schemaVersion: version)
    }

    /// The highest `schema_migrations` version, 0 for a database without kbtd's schema.
    static func schemaVersion(_ connection: SQLiteConnection) throws(SQLiteError) -> Int {
        // Two statements: a query naming a missing table fails when it is prepared.
        var hasTable = false
        try connection.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'")
            .forEachRow { _ in hasTable = true }
        guard hasTable else { return 0 }
        var version = 0
        try connection.prepare("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").forEachRow { version = Int($0.int(0)) }
        return version
    }

    /// Makes a new name in `path`'s folder durable (the file's own data is synced before).
    static func syncFolder(of path: String) {
        let fd = open(DatabaseFile.parent(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }
}
