import Foundation
import KBTDCore
@testable import KBTDStore
import Testing

/// The SQLite commit writes each counts table's rows in multi-row upserts (chunks
/// of 64, 32, ... 1 rows, texts bound in place from one buffer): wherever the chunks fall, the
/// rows it leaves must be the same, for new rows and for rows the upserts add to, in every table
/// (releases and days of votes included), and every count must be the batches' own.
@Suite("SQLite multi-row commit", .ownThreads)
struct MultiRowCommitTests {
    static let languages = ["en-US", "ja-JP", "zh-Hans", "de-DE", "fr-FR", "es-ES", "it-IT", "ko-KR", "pt-BR", "ru-RU", "emoji"]

    /// Commits that create well over 64 rows a table (many keys, several height bins), add to rows
    /// already stored, retry an id inside a commit and across commits, and mix trusted and untrusted sources.
    static func commits() -> [[PendingBatch]] {
        var first: [PendingBatch] = []
        for (m, model) in ["iPhone17,1", "iPhone15,2", "iPhone14,6", "iPhone16,2", "iPhone12,1"].enumerated() {
            for (l, language) in languages.enumerated() {
                let heights = (0..<6).map { 291 + Double((m + l + $0) % 9) * 4.5 }
                let source: SourceID = (m + l) % 3 == 0 ? .trusted : SourceID(network: "198.51.100.\(l)")
                let screen = l == 0 ? ScreenSize(width: 390 + m, height: 844) : nil
                first.append(pendingBatch("a-\(m)-\(l)", receivedAt: 1_000 + Int64(l), model: model, language: language,
                                          heights: heights, source: source, screen: screen))
                first[first.count - 1].delta.recordRelease(os: (m + l) % 2 == 0 ? "26.2" : "26.1")
                first[first.count - 1].delta.recordDay(receivedAt: 86_400 * Int64(l % 3) + 1_000)
            }
        }
        first.append(first[3])  // a retry in the same commit counts nothing
        var second = Array(first.prefix(20))  // retries of stored ids
        for (l, language) in languages.enumerated() {
            second.append(pendingBatch("b-\(l)", receivedAt: 4_000 + Int64(l), model: "iPhone17,1", language: language,
                                       heights: [336, 336, 345.5, 209], source: SourceID(network: "203.0.113.\(l % 4)"),
                                       screen: ScreenSize(width: 390, height: 844)))
            second[second.count - 1].delta.recordRelease(os: "26.2")
            second[second.count - 1].delta.recordDay(receivedAt: 86_400 * 2 + 1_000)
        }
        return [first, second, [pendingBatch("c", receivedAt: 9_000, heights: [300])]]
    }

    /// Every row of every table but `schema_migrations` (its times are the clock's), each value
    /// with SQLite's `quote()` (type and exact digits), sorted.
    static func dump(_ store: SQLiteTelemetryStore, leavingOut ignored: Set<String> = []) throws -> [String: [String]] {
        var tables: [String] = []
        try store.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name <> 'schema_migrations' ORDER BY name")
            .forEachRow { tables.append($0.text(0)) }
        var dump: [String: [String]] = [:]
        for table in tables {
            var columns: [String] = []
            try store.db.prepare("SELECT name FROM pragma_table_info('\(table)')").forEachRow { columns.append($0.text(0)) }
            var rows: [String] = []
            let select = "SELECT " + columns.map { ignored.contains($0) ? "'-'" : "quote(\"\($0)\")" }.joined(separator: " || ',' || ")
                + " FROM \"\(table)\""
            try store.db.prepare(select).forEachRow { rows.append($0.text(0)) }
            dump[table] = rows.sorted()
        }
        return dump
    }

    /// The same batches committed in the groups above and one batch a commit: each table's
    /// multi-row chunks fall elsewhere (a group's hundreds of rows against a batch's few), and the
    /// databases must hold the same rows. A network's `seen_at` and a key's `first_seen`,
    /// `last_seen` and `admitted_at` are the commit's time, not the batch's: left out.
    @Test func multiRowUpsertsLeaveTheSameRowsWhereverTheChunksFall() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var dumps: [[String: [String]]] = []
        var results: [[Bool]] = []
        var runs: [(statements: Int, rows: Int64)] = []
        for grouped in [true, false] {
            let store = try SQLiteTelemetryStore(path: directory.appendingPathComponent("\(grouped).sqlite").path)
            let before = store.statementRuns
            var stored: [Bool] = []
            for batches in Self.commits() {
                if grouped {
                    stored += try store.commit(batches).stored
                } else {
                    for batch in batches { stored += try store.commit([batch]).stored }
                }
            }
            results.append(stored)
            let after = store.statementRuns
            runs.append((after.statements - before.statements, Int64(after.rowsChanged - before.rowsChanged)))
            dumps.append(try Self.dump(store, leavingOut: ["seen_at", "first_seen", "last_seen", "admitted_at"]))
            #expect(try store.integrityCheck() == "ok")
        }
        let (grouped, single) = (dumps[0], dumps[1])
        #expect(results[0] == results[1])
        #expect(Set(grouped.keys) == Set(single.keys))
        for table in grouped.keys.sorted() {
            #expect(grouped[table] == single[table], "table \(table) differs")
        }
        // The case is big enough to need several chunks a table, and grouping saves statements.
        #expect(try #require(grouped["animation_counts"]).count > MultiRowUpsert.maxRows)
        #expect(try #require(grouped["height_counts"]).count > MultiRowUpsert.maxRows)
        #expect(try #require(grouped["release_counts"]).count > MultiRowUpsert.maxRows)
        #expect(try #require(grouped["day_votes"]).count > MultiRowUpsert.maxRows)
        #expect(runs[0].statements < runs[1].statements, "grouped \(runs[0]), one batch a commit \(runs[1])")
    }

    /// The stored counts of a mixed commit, stated explicitly (not only compared with the former path).
    @Test func aMixedCommitStoresEachCountOnce() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteTelemetryStore(path: directory.appendingPathComponent("kbtd.sqlite").path)
        let commits = Self.commits()
        for batches in commits { _ = try store.commit(batches) }
        let counts = try store.loadCounts()
        // Samples of distinct new ids: 55 first-commit batches of 6, 11 second-commit batches of 4, one of 1.
        let samples: Int64 = 55 * 6 + 11 * 4 + 1
        let storedSamples: Int64 = counts.animations.values.reduce(0, +)
        #expect(storedSamples == samples)
        // Cold starts: samples 0, 2, 4 of each 6 and 0, 2 of each 4.
        let coldStarts: Int64 = 55 * 3 + 11 * 2 + 1
        let storedColdStarts: Int64 = counts.coldStarts.values.reduce(0, +)
        #expect(storedColdStarts == coldStarts)
        let english = SeriesKey(model: "iPhone17,1", osMajor: 26, language: "en-US", orientation: .portrait, keyboardType: "default")
        // b-0: 336 twice (show), 345.5 (show), 209 hidden: docked 336 counts 2 from it.
        let docked336: Int64 = counts.heights[HeightCountKey(series: english, placement: .docked, halfPoints: 672), default: 0]
        #expect(docked336 >= 2)
        let screens: Int64 = counts.screens.values.reduce(0, +)
        #expect(screens == 16)
        let ids: Int = try store.batchIDCount()
        #expect(ids == 67)
    }
}

/// `SQLiteRows` copies a key's texts once and points its later rows at them, in the same table's
/// rows and the next table's (`removeParameters` keeps the texts), until `removeAll`: every row's
/// text parameters must read back the row's own key, long texts and short, keys met again or not.
@Suite("SQLite rows: a key's texts copied once")
struct SQLiteRowsKeyTextTests {
    static let keys = [
        SeriesKey(model: "iPhone17,1", osMajor: 26, language: "en-US", orientation: .portrait, keyboardType: "default"),
        SeriesKey(model: "iPhone17,1", osMajor: 26, language: "ja-JP", orientation: .landscape, keyboardType: "default"),
        SeriesKey(model: "iPhone14,6", osMajor: 18, language: "zh-Hans-CN-variant-long", orientation: .portrait,
                  keyboardType: "asciiCapableNumberPad"),
        SeriesKey(model: "iPhone17,1", osMajor: 18, language: "en-US", orientation: .portrait, keyboardType: "default"),
    ]

    /// The row's parameters as they read: texts through their offsets.
    static func values(_ rows: SQLiteRows) -> [String] {
        rows.parameters.map { parameter in
            switch parameter {
            case .text(let at): rows.text(at: at)
            case .int(let value): "\(value)"
            case .double(let value): "\(value)"
            case .null: "NULL"
            }
        }
    }

    static func expected(_ key: SeriesKey, _ rest: String) -> [String] {
        [key.model, "\(key.osMajor)", key.language, key.orientation.rawValue, key.keyboardType, rest]
    }

    @Test func everyRowReadsItsOwnKeyAcrossTablesAndCommits() {
        var rows = SQLiteRows()
        for commit in 0..<2 {
            // A first table: keys in an order with repeats, a text of the row's own between them.
            let first = [0, 1, 0, 2, 1, 3, 0]
            for (n, k) in first.enumerated() {
                rows.key(Self.keys[k])
                rows.text("row \(n) of commit \(commit)")
            }
            #expect(Self.values(rows) == first.enumerated().flatMap { Self.expected(Self.keys[$1], "row \($0) of commit \(commit)") })
            rows.removeParameters()
            // The next table: keys met in the first and one not.
            let second = [3, 2, 2, 0]
            for k in second {
                rows.key(Self.keys[k])
                rows.int(Int64(k))
            }
            #expect(Self.values(rows) == second.flatMap { Self.expected(Self.keys[$0], "\($0)") })
            rows.removeAll()
            #expect(rows.isEmpty)
        }
    }
}
