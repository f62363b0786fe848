#if canImport(Glibc)
import Glibc
#endif

/// A database file kbtd must not or cannot use. The daemon exits with a
/// documented code for each (see docs/command-line.md, "Exit codes").
public enum UnusableDatabase: Error, CustomStringConvertible, Sendable {
    /// Garbage, or another application's SQLite file: refused untouched.
    case notKbtd(path: String, why: String)
    /// Written by a newer kbtd: refused untouched.
    case newerSchema(path: String, version: Int, supported: Int)
    /// Written by a kbtd so old that a reader (`kbtd stats`, `export`, ...) cannot read it; the daemon
    /// upgrades it when it opens it (`kbtd serve`, once, with write access).
    case olderSchema(path: String, version: Int, oldestReadable: Int)
    /// The file cannot be created there (a directory, a missing or read-only folder).
    case cannotCreate(path: String, why: String)

    public var description: String {
        switch self {
        case .notKbtd(let path, let why): "\(path) is not a kbtd database: \(why)"
        case .newerSchema(let path, let version, let supported):
            "\(path) has schema version \(version), newer than this kbtd supports (\(supported)); upgrade kbtd"
        case .olderSchema(let path, let version, let oldest):
            "\(path) has schema version \(version), older than this kbtd reads without upgrading it (\(oldest)); "
                + "start the daemon on it once (kbtd serve) to upgrade it"
        case .cannotCreate(let path, let why): "cannot create the database \(path): \(why)"
        }
    }
}

/// File-level rules for the database: created with restrictive permissions
/// before SQLite opens it, and one daemon per file.
public enum DatabaseFile {
    /// Checks the path and creates a missing file with `mode` (SQLite gives its
    /// WAL and shared-memory files the same permissions).
    public static func prepare(_ path: String, mode: UInt32) throws(UnusableDatabase) {
        var info = stat()
        if stat(path, &info) == 0 {
            if (info.st_mode & S_IFMT) == S_IFDIR { throw .cannotCreate(path: path, why: "it is a directory") }
            return
        }
        let folder = parent(of: path)
        var folderInfo = stat()
        guard stat(folder, &folderInfo) == 0, (folderInfo.st_mode & S_IFMT) == S_IFDIR else {
            throw .cannotCreate(path: path, why: "the directory \(folder) does not exist")
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(mode))
        guard fd >= 0 else {
            let code = errno
            if code == EEXIST { return }
            throw .cannotCreate(path: path, why: "\(String(cString: strerror(code))) in \(folder)")
        }
        // open() applies the umask; the mode asked for is the mode meant.
        fchmod(fd, mode_t(mode))
        close(fd)
        // The new file's name is durable only once its directory is synced: SQLite syncs the
        // directory of the log it creates, never the database's (it did not create it). As SQLite
        // does for its own, a file system that cannot sync a directory is not an error.
        let directory = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directory >= 0 else { return }
        _ = fsync(directory)
        close(directory)
    }

    /// The folder of a file path (`.` for a bare name).
    public static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let folder = String(path[..<slash])
        return folder.isEmpty ? "/" : folder
    }
}

/// Another process holds the lock: a second daemon on the same database or socket.
public struct AlreadyLocked: Error, CustomStringConvertible, Sendable {
    public var path: String
    public var what: String
    public var description: String {
        "another kbtd is already using \(what) \(path) (lock held on \(path)); stop it first or choose another \(what)"
    }
}

/// An exclusive `flock` held for the life of the process.
public final class ExclusiveLock: Sendable {
    private let fd: Int32

    /// Takes the lock on `path` (created when missing with `mode`), or throws `AlreadyLocked`.
    public init(path: String, what: String, mode: UInt32 = 0o600) throws {
        let fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, mode_t(mode))
        guard fd >= 0 else {
            throw UnusableDatabase.cannotCreate(path: path, why: String(cString: strerror(errno)))
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw AlreadyLocked(path: path, what: what)
        }
        self.fd = fd
    }

    deinit { close(fd) }
}
