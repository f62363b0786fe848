import KBTDCore

/// The dashboard's queries (`TelemetryReader.dashboardData`), one text for
/// SQLite and PostgreSQL: each aggregates in the database and returns at most
/// what the page draws (`DashboardData`'s limits), so reading the page costs
/// bounded memory at any number of keys. Text values are ordered byte-wise
/// (`COLLATE "C"` on PostgreSQL, SQLite's default), as Swift orders these ASCII
/// strings; ties are broken as `DashboardData(counts:filter:minSamples:)` breaks them.
public struct DashboardQueries: Sendable {
    public enum Dialect: Sendable { case sqlite, postgres }

    public enum Value: Sendable, Equatable {
        case text(String)
        case int(Int64)
    }

    /// SQL with `?` placeholders (SQLite) or `$1`... (PostgreSQL), and their values in order.
    public struct Query: Sendable {
        public var sql: String
        public var values: [Value]
    }

    public let dialect: Dialect
    public let filter: DashboardFilter

    public init(_ dialect: Dialect, filter: DashboardFilter) {
        self.dialect = dialect
        self.filter = filter
    }

    static let keyColumns = "model, os_major, language, orientation, keyboard_type"

    // MARK: The statements, in the order a store runs them

    /// Per filter list (`model`, `os_major` or `language`, over every key): the values with the
    /// most samples, and how many distinct values there are (each row's third column).
    public func choices(_ column: String) -> Query {
        let order = column == "os_major" ? column : text(column)
        return query("""
            SELECT \(column), \(sum("count")) AS s, COUNT(*) OVER () FROM animation_counts GROUP BY \(column)
            ORDER BY s DESC, \(order) LIMIT \(DashboardData.maxChoices)
            """, [])
    }

    /// Keys and samples matching the filter (one row).
    public func totals() -> Query {
        let (condition, values) = self.condition()
        return query("""
            SELECT COUNT(*), COALESCE(\(sum("total")), 0) FROM (
                SELECT \(sum("count")) AS total FROM animation_counts WHERE \(condition) GROUP BY \(Self.keyColumns)) t
            """, values)
    }

    /// The model with the most docked samples under the filter (at most one row).
    public func busiestModel() -> Query {
        let (condition, values) = self.condition()
        return query("""
            SELECT model FROM height_counts WHERE placement = 'docked' AND \(condition)
            GROUP BY model ORDER BY \(sum("count")) DESC, \(text("model")) LIMIT 1
            """, values)
    }

    /// The chosen model's panels with the most docked samples: language, orientation,
    /// total, and how many panels there are.
    public func panels(model: String) -> Query {
        let (condition, values) = self.condition()
        return query("""
            SELECT language, orientation, \(sum("count")) AS total, COUNT(*) OVER () FROM height_counts
            WHERE model = ? AND placement = 'docked' AND keyboard_type = 'default' AND \(condition)
            GROUP BY language, orientation
            ORDER BY total DESC, \(text("language")), \(text("orientation")) LIMIT \(DashboardData.maxPanels)
            """, [.text(model)] + values)
    }

    /// The bins of the panels shown: language, orientation, height bin, count.
    public func bins(model: String, panels: [DashboardData.Panel]) -> Query {
        let (condition, values) = self.condition()
        let pairs = panels.map { _ in "(?, ?)" }.joined(separator: ", ")
        let pairValues = panels.flatMap { [Value.text($0.language), .text($0.orientation.rawValue)] }
        return query("""
            SELECT language, orientation, height_bin, \(sum("count")) FROM height_counts
            WHERE model = ? AND placement = 'docked' AND keyboard_type = 'default' AND \(condition)
                AND (language, orientation) IN (VALUES \(pairs))
            GROUP BY language, orientation, height_bin
            """, [.text(model)] + values + pairValues)
    }

    /// Cold starts of the whole filter: preloaded (0 or 1), bucket, count.
    public func coldBuckets() -> Query {
        let (condition, values) = self.condition()
        return query("""
            SELECT preloaded, bucket, \(sum("count")) FROM cold_start_counts WHERE \(condition) GROUP BY preloaded, bucket
            """, values)
    }

    /// The keys with both kinds of cold start and the most samples: key columns, cold, warm.
    public func coldStartKeys() -> Query {
        let (condition, values) = self.condition()
        return query("""
            SELECT \(Self.keyColumns), cold, warm FROM (
                SELECT \(Self.keyColumns), \(sum("CASE WHEN preloaded = 0 THEN count ELSE 0 END")) AS cold,
                    \(sum("CASE WHEN preloaded = 0 THEN 0 ELSE count END")) AS warm
                FROM cold_start_counts WHERE \(condition) GROUP BY \(Self.keyColumns)) t
            WHERE cold > 0 AND warm > 0
            ORDER BY cold + warm DESC, \(keyOrder) LIMIT \(DashboardData.maxColdStartRows)
            """, values)
    }

    /// One key's cold starts: preloaded, bucket, count.
    public func coldStarts(of key: SeriesKey) -> Query {
        query("""
            SELECT preloaded, bucket, count FROM cold_start_counts
            WHERE model = ? AND os_major = ? AND language = ? AND orientation = ? AND keyboard_type = ?
            """, Self.values(key))
    }

    /// The animation durations (`duration_ms`) or curves (`curve`) with the most samples: value, count.
    public func animation(_ column: String) -> Query {
        let (condition, values) = self.condition()
        return query("""
            SELECT \(column), \(sum("count")) AS s FROM animation_counts WHERE \(condition)
            GROUP BY \(column) ORDER BY s DESC, \(column) LIMIT \(DashboardData.maxAnimationRows)
            """, values)
    }

    /// The keys whose docked samples are closest to `minSamples`: key columns, docked samples.
    public func thinKeys(minSamples: Int64) -> Query {
        let (condition, values) = self.condition()
        return query("""
            SELECT \(Self.keyColumns), \(sum("count")) AS docked FROM height_counts
            WHERE placement = 'docked' AND \(condition) GROUP BY \(Self.keyColumns)
            ORDER BY ABS(\(sum("count")) - ?), docked, \(keyOrder) LIMIT \(DashboardData.maxThinKeys)
            """, values + [.int(minSamples)])
    }

    // MARK: Helpers

    static func values(_ key: SeriesKey) -> [Value] {
        [.text(key.model), .int(Int64(key.osMajor)), .text(key.language), .text(key.orientation.rawValue), .text(key.keyboardType)]
    }

    /// The filter as a condition on the key columns.
    func condition() -> (String, [Value]) {
        var parts: [String] = []
        var values: [Value] = []
        if let model = filter.model { parts.append("model = ?"); values.append(.text(model)) }
        if let osMajor = filter.osMajor { parts.append("os_major = ?"); values.append(.int(Int64(osMajor))) }
        if let language = filter.language { parts.append("language = ?"); values.append(.text(language)) }
        return (parts.isEmpty ? "1 = 1" : parts.joined(separator: " AND "), values)
    }

    /// `SUM` as a 64-bit integer (PostgreSQL sums BIGINT into NUMERIC).
    func sum(_ expression: String) -> String {
        dialect == .postgres ? "SUM(\(expression))::bigint" : "SUM(\(expression))"
    }

    /// A text column ordered byte-wise, whatever the database's collation.
    func text(_ column: String) -> String {
        dialect == .postgres ? "\(column) COLLATE \"C\"" : column
    }

    /// `SeriesKey`'s order.
    var keyOrder: String {
        "\(text("model")), os_major, \(text("language")), \(text("orientation")), \(text("keyboard_type"))"
    }

    /// Numbers the placeholders for PostgreSQL (no statement here has a `?` inside a literal).
    func query(_ sql: String, _ values: [Value]) -> Query {
        guard dialect == .postgres else { return Query(sql: sql, values: values) }
        var numbered = ""
        var n = 0
        for character in sql {
            if character == "?" {
                n += 1
                numbered += "$\(n)"
            } else {
                numbered.append(character)
            }
        }
        return Query(sql: numbered, values: values)
    }
}
