import CSQLite
import Foundation

/// An SQLite failure: the result code, the library's message and what kbtd was doing.
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    public var code: Int32
    public var message: String
    public var context: String

    public var description: String { "\(context): \(message) (SQLite code \(code))" }

    /// Disk full, read-only file, I/O error, locked: conditions that may clear by themselves.
    public var isTransient: Bool {
        let primary = code & 0xFF
        return [SQLITE_FULL, SQLITE_READONLY, SQLITE_IOERR, SQLITE_BUSY, SQLITE_LOCKED, SQLITE_CANTOPEN].contains(primary)
    }
}

/// `SQLITE_TRANSIENT` is a macro Swift cannot import: it tells SQLite to copy bound text.
let sqliteTransient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

/// One SQLite connection, used from one thread at a time.
final class SQLiteConnection {
    let handle: OpaquePointer
    let path: String

    enum Mode {
        case readWrite, readOnly
        /// Read-only without the WAL index: for a file on a read-only file
        /// system that no process is writing (SQLite's `immutable=1`).
        case immutable
    }

    /// Process-wide settings, made once before the first connection opens. Debian's SQLite
    /// is built without lookaside memory (`OMIT_LOOKASIDE`): every register and cursor of a
    /// statement run is a `malloc` and a `free`, and with allocation statistics on (SQLite's
    /// default) each also takes a global mutex. Nothing in kbtd reads those statistics
    /// (`sqlite3_memory_used`, `sqlite3_status`), so they are off (0.78x the
    /// instructions a commit, with rows bound in place).
    static let configured: Int32 = kbtd_sqlite3_config_memstatus(0)

    /// - Parameter vfs: an SQLite VFS by name; nil: the default.
    init(path: String, mode: Mode, vfs: String? = nil) throws(SQLiteError) {
        _ = Self.configured
        var db: OpaquePointer?
        let flags: Int32
        var name = path
        switch mode {
        case .readWrite: flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        case .readOnly: flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX
        case .immutable:
            flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI
            let escaped = path.replacingOccurrences(of: "%", with: "%25").replacingOccurrences(of: "?", with: "%3f")
                .replacingOccurrences(of: "#", with: "%23")
            name = "file:\(escaped)?immutable=1"
        }
        let status = sqlite3_open_v2(name, &db, flags, vfs)
        guard status == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(code: status, message: message, context: "opening \(path)")
        }
        self.handle = db
        self.path = path
        sqlite3_extended_result_codes(db, 1)
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    func error(_ status: Int32, _ context: String) -> SQLiteError {
        SQLiteError(code: status, message: String(cString: sqlite3_errmsg(handle)), context: context)
    }

    /// Runs one or more statements that return no rows.
    func execute(_ sql: String) throws(SQLiteError) {
        var message: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(handle, sql, nil, nil, &message)
        if status != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? "error"
            sqlite3_free(message)
            throw SQLiteError(code: status, message: text, context: String(sql.prefix(80)))
        }
    }

    func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard status == SQLITE_OK, let statement else { throw error(status, "preparing \(sql.prefix(80))") }
        return SQLiteStatement(statement, connection: self)
    }

    var changes: Int { Int(sqlite3_changes(handle)) }

    /// How a transaction takes its locks: `deferred` reads (a snapshot from the first read),
    /// `immediate` writes (the write lock at once, so a busy database fails at BEGIN, not mid-way).
    enum TransactionKind: String { case deferred = "BEGIN;", immediate = "BEGIN IMMEDIATE;" }

    /// True while a transaction is open (SQLite's autocommit is off).
    var isInsideTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws
    /// (the body's error is the one thrown). Inside an open transaction `body` simply runs in
    /// it: the outer one decides (GRDB's `Database.inTransaction` is the model).
    func inTransaction<T>(_ kind: TransactionKind = .deferred, _ body: () throws -> T) throws -> T {
        if isInsideTransaction { return try body() }
        try execute(kind.rawValue)
        let value: T
        do {
            value = try body()
        } catch {
            try? execute("ROLLBACK;")
            throw error
        }
        do {
            try execute("COMMIT;")
        } catch {
            try? execute("ROLLBACK;")
            throw error
        }
        return value
    }
}

/// A prepared statement, reused across commits.
final class SQLiteStatement {
    let handle: OpaquePointer
    unowned let connection: SQLiteConnection

    init(_ handle: OpaquePointer, connection: SQLiteConnection) {
        self.handle = handle
        self.connection = connection
    }

    deinit {
        sqlite3_finalize(handle)
    }

    func bind(_ values: [SQLiteValue]) throws(SQLiteError) {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let status: Int32
            switch value {
            case .int(let v): status = sqlite3_bind_int64(handle, index, v)
            case .double(let v): status = sqlite3_bind_double(handle, index, v)
            case .text(let v): status = sqlite3_bind_text(handle, index, v, -1, sqliteTransient)
            case .null: status = sqlite3_bind_null(handle, index)
            }
            guard status == SQLITE_OK else { throw connection.error(status, "binding parameter \(index)") }
        }
    }

    /// Runs a statement that returns no rows.
    func run(_ values: [SQLiteValue]) throws(SQLiteError) {
        try bind(values)
        let status = sqlite3_step(handle)
        sqlite3_reset(handle)
        guard status == SQLITE_DONE else { throw connection.error(status, "executing statement") }
    }

    /// Runs a statement that returns no rows, its parameters bound in order by `body`
    /// (no array of values; text bound without a copy, see `SQLiteBinder.text`).
    func run(_ body: (inout SQLiteBinder) -> Void) throws(SQLiteError) {
        try finish(step(body))
    }

    /// Binds with `body`, steps once and resets: `SQLITE_DONE`, or the failing code (with the
    /// parameter whose binding failed, else 0). `finish` turns a failure into an error.
    func step(_ body: (inout SQLiteBinder) -> Void) -> (status: Int32, failedAt: Int32) {
        var binder = SQLiteBinder(handle: handle)
        body(&binder)
        var status = binder.status
        if status == SQLITE_OK { status = sqlite3_step(handle) }
        sqlite3_reset(handle)
        // Drops the bound text pointers, which live only as long as `body`'s caller keeps them.
        sqlite3_clear_bindings(handle)
        return (status, binder.failedAt)
    }

    func finish(_ result: (status: Int32, failedAt: Int32)) throws(SQLiteError) {
        guard result.status != SQLITE_DONE else { return }
        throw connection.error(result.status, result.failedAt == 0 ? "executing statement" : "binding parameter \(result.failedAt)")
    }

    /// Steps through every row, handing each to `body`.
    func forEachRow(_ values: [SQLiteValue] = [], _ body: (SQLiteRow) -> Void) throws(SQLiteError) {
        try bind(values)
        defer { sqlite3_reset(handle) }
        while true {
            let status = sqlite3_step(handle)
            if status == SQLITE_DONE { return }
            guard status == SQLITE_ROW else { throw connection.error(status, "reading rows") }
            body(SQLiteRow(statement: handle))
        }
    }
}

/// Binds a statement's parameters in order (`SQLiteStatement.run(_:)`): 1, 2, 3, ...
struct SQLiteBinder {
    let handle: OpaquePointer
    private(set) var index: Int32 = 1
    /// The first binding's failure (`SQLITE_OK` while none failed), and its parameter.
    private(set) var status = SQLITE_OK
    private(set) var failedAt: Int32 = 0

    init(handle: OpaquePointer) { self.handle = handle }

    private mutating func check(_ result: Int32) {
        if result != SQLITE_OK && status == SQLITE_OK { (status, failedAt) = (result, index) }
        index += 1
    }

    mutating func int(_ value: Int64) { check(sqlite3_bind_int64(handle, index, value)) }
    mutating func double(_ value: Double) { check(sqlite3_bind_double(handle, index, value)) }
    mutating func null() { check(sqlite3_bind_null(handle, index)) }
    /// Text SQLite reads in place (`SQLITE_STATIC`: no copy, no allocation): `text` must stay
    /// valid until the statement has run, as it does inside a `withCString` around `run`.
    mutating func text(_ text: UnsafePointer<CChar>) { check(sqlite3_bind_text(handle, index, text, -1, nil)) }
}

enum SQLiteValue {
    case int(Int64)
    case double(Double)
    case text(String)
    case null
}

/// The current row of a statement.
struct SQLiteRow {
    let statement: OpaquePointer

    func int(_ column: Int32) -> Int64 { sqlite3_column_int64(statement, column) }
    func double(_ column: Int32) -> Double { sqlite3_column_double(statement, column) }
    func text(_ column: Int32) -> String {
        guard let pointer = sqlite3_column_text(statement, column) else { return "" }
        return String(cString: pointer)
    }
}
