import CSQLite
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Makes an SQLite write-ahead log durable from a thread other than the one writing it.
///
/// The daemon's writer commits with `synchronous=NORMAL`: SQLite writes a commit's WAL
/// frames and returns without an fsync, and the group-commit writer hands the commit to a
/// thread of its own (`GroupCommitWriter`), which calls `syncWritten()` and only then answers
/// the commit's requests, while the writer already runs the next transaction. `fdatasync`
/// applies to the file, not the descriptor, so this descriptor of its own flushes every frame
/// SQLite's descriptor wrote before the call, and one call covers every commit written so far.
/// That is what `synchronous=FULL` does at each commit, moved off the writer's thread: each
/// answered batch has had its frames, commit frame included, flushed first. SQLite itself
/// still syncs the log before a checkpoint copies it into the database, and the database
/// after (`synchronous=NORMAL` keeps those), so a checkpoint never outruns the log.
public final class WALDurability: Sendable {
    /// The write-ahead log's path (the database's path and `-wal`).
    public let path: String
    private let flush: @Sendable (Int32) -> Int32
    private let file = Mutex<OpenFile?>(nil)

    private struct OpenFile {
        var descriptor: Int32
        var device: UInt64
        var inode: UInt64
    }

    /// The system's `fdatasync`, what `flush` is outside tests.
    public static let fdatasync: @Sendable (Int32) -> Int32 = { Glibc.fdatasync($0) }

    /// - Parameter flush: what flushes a descriptor's file (`fdatasync`; a test holds or fails it).
    public init(databasePath: String, flush: @escaping @Sendable (Int32) -> Int32 = WALDurability.fdatasync) {
        self.path = databasePath + "-wal"
        self.flush = flush
    }

    deinit {
        file.withLock { if let open = $0 { _ = close(open.descriptor) } }
    }

    /// Flushes every frame written to the log before the call to disk. Opens the log on first
    /// use and again if the file at `path` is another one (a log SQLite deleted and created
    /// anew), and then also flushes its directory, so the new file's name is durable too.
    public func syncWritten() throws(SQLiteError) {
        try file.withLock { (file: inout OpenFile?) throws(SQLiteError) in
            var now = stat()
            guard stat(path, &now) == 0 else { throw failure("stat") }
            if file == nil || file?.device != UInt64(now.st_dev) || file?.inode != UInt64(now.st_ino) {
                if let open = file { _ = close(open.descriptor); file = nil }
                let descriptor = open(path, O_RDONLY | O_CLOEXEC)
                guard descriptor >= 0 else { throw failure("open") }
                file = OpenFile(descriptor: descriptor, device: UInt64(now.st_dev), inode: UInt64(now.st_ino))
                try syncDirectory()
            }
            guard flush(file!.descriptor) == 0 else { throw failure("fdatasync") }
        }
    }

    private func syncDirectory() throws(SQLiteError) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw failure("open the directory of") }
        defer { _ = close(descriptor) }
        guard flush(descriptor) == 0 else { throw failure("fdatasync the directory of") }
    }

    private func failure(_ call: String) -> SQLiteError {
        let code = errno
        return SQLiteError(code: SQLITE_IOERR, message: "\(call) \(path): \(String(cString: strerror(code)))",
                           context: "making the write-ahead log durable")
    }
}

/// A store whose `commit` returns once its transaction is written, before it is durable:
/// the group-commit writer makes it durable with `durability` on a thread of its own and
/// answers the commit's requests only after (SQLite in the daemon; nil: durable at commit).
public protocol DeferredDurability: AnyObject {
    var durability: WALDurability? { get }
}
