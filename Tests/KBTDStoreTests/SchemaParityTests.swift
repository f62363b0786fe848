import Foundation
@testable import KBTDPostgres
@testable import KBTDStore
import Testing

/// The SQLite schema (`Schema`) and the PostgreSQL one (`PostgresSchema`) are
/// written twice, in two dialects; a step added to one and not the other, or a
/// column spelled differently, would only show when a node reads a table the
/// other store wrote. Types differ on purpose (INTEGER and BIGINT, REAL and
/// DOUBLE PRECISION); everything else must match, step by step.
@Suite("Schema parity: SQLite and PostgreSQL")
struct SchemaParityTests {
    @Test("both schemas list the same versions, in order, with the same names")
    func sameSteps() {
        let sqlite = Schema.migrations.map { "\($0.version) \($0.name)" }
        let postgres = PostgresSchema.migrations.map { "\($0.version) \($0.name)" }
        #expect(sqlite == postgres)
        #expect(Schema.migrations.map(\.version) == Array(1...Schema.migrations.count), "versions are 1, 2, 3... with no gap")
        #expect(Schema.latestVersion == PostgresSchema.latestVersion)
    }

    @Test("each version creates the same tables, columns, primary keys and indexes, and adds the same columns")
    func sameShapes() {
        for (lite, postgres) in zip(Schema.migrations, PostgresSchema.migrations) {
            let liteShape = SchemaShape(statements: SchemaShape.split(lite.sql))
            let postgresShape = SchemaShape(statements: postgres.sql)
            #expect(!liteShape.facts.isEmpty, "version \(lite.version) changes the schema")
            #expect(liteShape.facts == postgresShape.facts, "version \(lite.version) (\(lite.name))")
        }
    }

    @Test("the shape reader sees what a step declares")
    func shapeReader() {
        let shape = SchemaShape(statements: SchemaShape.split("""
            -- a comment; with a semicolon
            CREATE TABLE t (
                a TEXT NOT NULL,
                b INTEGER PRIMARY KEY,
                c REAL NOT NULL DEFAULT (1 + 2)
            ) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS u (x BIGINT, y TEXT, PRIMARY KEY (x, y));
            ALTER TABLE t ADD COLUMN d INTEGER;
            CREATE INDEX t_by_d ON t(d);
            INSERT INTO t VALUES ('a;b', 1, 2.0);
            """))
        #expect(shape.facts == [
            "table t(a, b, c) primary key (b)",
            "table u(x, y) primary key (x, y)",
            "column t.d",
            "index t_by_d on t(d)",
        ])
    }
}

/// What a migration step declares, dialect aside: one line per table created
/// (its columns in order and its primary key), column added and index created.
struct SchemaShape {
    var facts: [String] = []

    init(statements: [String]) {
        for statement in statements {
            let words = Self.words(statement)
            let upper = words.map { $0.uppercased() }
            if upper.starts(with: ["CREATE", "TABLE"]) {
                facts.append(Self.table(statement, words: words, upper: upper))
            } else if upper.starts(with: ["ALTER", "TABLE"]), upper.count > 5, upper[3] == "ADD", upper[4] == "COLUMN" {
                facts.append("column \(words[2]).\(words[5])")
            } else if upper.starts(with: ["CREATE", "INDEX"]) || upper.starts(with: ["CREATE", "UNIQUE", "INDEX"]) {
                let name = words[upper.firstIndex(of: "ON")! - 1]
                let target = statement[statement.range(of: " ON ", options: .caseInsensitive)!.upperBound...]
                facts.append("index \(name) on \(Self.squeezed(String(target)))")
            }
        }
    }

    /// SQLite's one text to statements: comments dropped, split at `;` outside quotes.
    static func split(_ sql: String) -> [String] {
        var statements: [String] = []
        var current = ""
        var inQuote = false
        for line in sql.split(separator: "\n", omittingEmptySubsequences: false) {
            var text = Substring(line)
            if !inQuote, let comment = text.range(of: "--") { text = text[..<comment.lowerBound] }
            for character in text {
                if character == "'" { inQuote.toggle() }
                if character == ";" && !inQuote {
                    statements.append(current)
                    current = ""
                } else {
                    current.append(character)
                }
            }
            current.append("\n")
        }
        if !current.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty { statements.append(current) }
        return statements.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }
    }

    static func words(_ text: String) -> [String] {
        text.split(whereSeparator: { $0.isWhitespace || $0 == "(" || $0 == ")" || $0 == "," }).map(String.init)
    }

    static func squeezed(_ text: String) -> String {
        text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    /// `table name(columns) primary key (columns)` from `CREATE TABLE [IF NOT EXISTS] name (...)`.
    static func table(_ statement: String, words: [String], upper: [String]) -> String {
        let name = upper.starts(with: ["CREATE", "TABLE", "IF", "NOT", "EXISTS"]) ? words[5] : words[2]
        let open = statement.firstIndex(of: "(")!
        var depth = 0
        var items: [String] = []
        var item = ""
        for character in statement[statement.index(after: open)...] {
            if character == "(" { depth += 1 }
            if character == ")" {
                if depth == 0 { break }
                depth -= 1
            }
            if character == "," && depth == 0 {
                items.append(item)
                item = ""
            } else {
                item.append(character)
            }
        }
        items.append(item)
        var columns: [String] = []
        var primaryKey: [String] = []
        for item in items {
            let itemWords = Self.words(item)
            guard let first = itemWords.first else { continue }
            if first.uppercased() == "PRIMARY" {
                primaryKey = Array(itemWords.dropFirst(2))
            } else if ["UNIQUE", "FOREIGN", "CHECK", "CONSTRAINT"].contains(first.uppercased()) {
                continue
            } else {
                columns.append(first)
                let upperItem = itemWords.map { $0.uppercased() }
                if let at = upperItem.firstIndex(of: "PRIMARY"), upperItem.indices.contains(at + 1), upperItem[at + 1] == "KEY" {
                    primaryKey = [first]
                }
            }
        }
        return "table \(name)(\(columns.joined(separator: ", "))) primary key (\(primaryKey.joined(separator: ", ")))"
    }
}
