import CSQLite
import KBTDCore

/// One table's upsert written for 1, 2, 4, ... `maxRows` rows (`INSERT ... VALUES (...), (...)
/// ON CONFLICT ...`): a commit's rows of that table run in the fewest chunks of those sizes, each
/// statement prepared once, so a table's n rows cost about n / 64 + 6 statement runs instead of n.
/// Without lookaside memory (Debian's SQLite) every statement run mallocs and frees its cursors and
/// registers; a run of 64 rows pays that once (0.90x the instructions a commit).
struct MultiRowUpsert: Sendable {
    /// 64 rows of at most 9 parameters: 576, under SQLite's 999 of before 3.32.
    static let maxRows = 64
    /// Where this table's statements sit in the store's cache (`SQLiteTelemetryStore.upsertStatement`).
    let slot: Int
    /// Parameters a row.
    let width: Int
    /// The statement for `1 << i` rows at index `i`.
    let sql: [String]

    static let sizes = MultiRowUpsert.maxRows.trailingZeroBitCount + 1
    /// How many tables are written this way (the cache's rows).
    static let slots = 10

    /// - Parameters:
    ///   - insert: `INSERT INTO table(columns)`, without `VALUES`.
    ///   - conflict: the `ON CONFLICT` clause.
    init(slot: Int, _ insert: String, width: Int, conflict: String) {
        precondition(slot < Self.slots)
        self.slot = slot
        self.width = width
        let row = "(" + Array(repeating: "?", count: width).joined(separator: ", ") + ")"
        sql = (0..<Self.sizes).map { power in
            insert + "\nVALUES " + Array(repeating: row, count: 1 << power).joined(separator: ", ") + "\n" + conflict
        }
    }
}

/// The rows of one multi-row upsert, gathered flat (`width` parameters a row), their texts copied
/// back to back into one buffer, NUL-terminated: a statement of 64 rows then binds every text in
/// place (`SQLITE_STATIC`), with no allocation a row or a text. Both buffers keep their capacity from
/// commit to commit (`SQLiteTelemetryStore.rows`).
struct SQLiteRows {
    enum Parameter {
        case int(Int64)
        case double(Double)
        /// The offset of a NUL-terminated text in `texts`.
        case text(Int)
        case null
    }

    /// Where a key's four texts sit in `texts` (`key(_:)`).
    private struct KeyTexts {
        var model: Int
        var language: Int
        var orientation: Int
        var keyboardType: Int
    }

    private(set) var parameters: [Parameter] = []
    private var texts: [UInt8] = []
    /// The keys whose texts `texts` holds: a key's later rows, in this table or the commit's next
    /// ones, bind the same bytes (a commit's rows are about ten a key across its tables).
    private var keyTexts: [SeriesKey: KeyTexts] = [:]

    var isEmpty: Bool { parameters.isEmpty }

    mutating func int(_ value: Int64) { parameters.append(.int(value)) }
    mutating func double(_ value: Double) { parameters.append(.double(value)) }
    mutating func null() { parameters.append(.null) }
    mutating func text(_ value: String) {
        parameters.append(.text(append(value)))
    }

    /// Copies `value` into `texts`, NUL-terminated; returns its offset.
    private mutating func append(_ value: String) -> Int {
        let offset = texts.count
        if value.utf8.withContiguousStorageIfAvailable({ texts.append(contentsOf: $0) }) == nil {
            texts.append(contentsOf: value.utf8)
        }
        texts.append(0)
        return offset
    }

    /// A key's five columns (`model, os_major, language, orientation, keyboard_type`), the order
    /// every keyed table's upsert starts with. Its texts are copied once until `removeAll()`.
    mutating func key(_ key: SeriesKey) {
        let at: KeyTexts
        if let known = keyTexts[key] {
            at = known
        } else {
            at = KeyTexts(model: append(key.model), language: append(key.language),
                          orientation: append(key.orientation.rawValue), keyboardType: append(key.keyboardType))
            keyTexts[key] = at
        }
        parameters.append(.text(at.model))
        parameters.append(.int(Int64(key.osMajor)))
        parameters.append(.text(at.language))
        parameters.append(.text(at.orientation))
        parameters.append(.text(at.keyboardType))
    }

    /// The text a `.text` parameter points at (what SQLite reads there).
    func text(at offset: Int) -> String {
        let end = texts[offset...].firstIndex(of: 0)!
        return String(decoding: texts[offset..<end], as: UTF8.self)
    }

    /// Empties the rows; the texts stay, for the next table's rows of the same commit.
    mutating func removeParameters() {
        parameters.removeAll(keepingCapacity: true)
    }

    /// Empties the rows and the texts (a commit's start).
    mutating func removeAll() {
        parameters.removeAll(keepingCapacity: true)
        texts.removeAll(keepingCapacity: true)
        keyTexts.removeAll(keepingCapacity: true)
    }

    /// Binds `parameters[range]` to the statement's parameters 1, 2, ..., steps once, resets and
    /// clears the bindings (no pointer into `texts` outlives the run): `SQLITE_DONE`, or the failing
    /// code with the parameter whose binding failed (else 0), as `SQLiteStatement.step` answers.
    func step(_ statement: OpaquePointer, _ range: Range<Int>) -> (status: Int32, failedAt: Int32) {
        texts.withUnsafeBufferPointer { texts in
            let base = UnsafeRawPointer(texts.baseAddress)?.assumingMemoryBound(to: CChar.self)
            var status = SQLITE_OK
            var failedAt: Int32 = 0
            for (offset, parameter) in zip(Int32(1)..., parameters[range]) {
                let result: Int32
                switch parameter {
                case .int(let value): result = sqlite3_bind_int64(statement, offset, value)
                case .double(let value): result = sqlite3_bind_double(statement, offset, value)
                case .text(let at): result = sqlite3_bind_text(statement, offset, base! + at, -1, nil)
                case .null: result = sqlite3_bind_null(statement, offset)
                }
                if result != SQLITE_OK { (status, failedAt) = (result, offset); break }
            }
            if status == SQLITE_OK { status = sqlite3_step(statement) }
            sqlite3_reset(statement)
            sqlite3_clear_bindings(statement)
            return (status, failedAt)
        }
    }
}

extension SQLiteTelemetryStore {
    /// Upserts `rows` (every row `upsert.width` parameters) in chunks of 64, 32, ... 1 rows, then
    /// empties `rows` (their texts stay: `removeParameters`).
    func run(_ upsert: MultiRowUpsert, _ rows: inout SQLiteRows) throws(SQLiteError) {
        let count = rows.parameters.count
        precondition(count % upsert.width == 0, "a row of \(upsert.width) parameters")
        var start = 0
        while start < count {
            let remaining = (count - start) / upsert.width
            // The largest chunk size (a power of two, at most maxRows) that fits what is left.
            let power = min(Int.bitWidth - 1 - remaining.leadingZeroBitCount, MultiRowUpsert.sizes - 1)
            let end = start + (1 << power) * upsert.width
            let statement = try upsertStatement(upsert, power: power)
            try statement.finish(rows.step(statement.handle, start..<end))
            start = end
        }
        rows.removeParameters()
    }

    /// The prepared statement for `1 << power` rows of `upsert`, cached by slot (no hash of its text).
    func upsertStatement(_ upsert: MultiRowUpsert, power: Int) throws(SQLiteError) -> SQLiteStatement {
        let index = upsert.slot * MultiRowUpsert.sizes + power
        if let cached = upsertStatements[index] { return cached }
        let prepared = try statement(upsert.sql[power])
        upsertStatements[index] = prepared
        return prepared
    }
}
