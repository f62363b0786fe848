import KBTDCore

/// `kbtd stats` output formats.
public enum StatsFormat: String, Sendable, CaseIterable {
    case table, json, csv
}

/// Renders stats rows as an aligned table, JSON or CSV.
public enum StatsFormatter {
    static let columns = [
        "model", "os", "language", "orientation", "keyboard_type", "samples", "docked", "height", "p10", "p90",
        "show_s", "curve7", "cold_p50_ms", "cold_p95_ms", "warm_p50_ms", "warm_p95_ms",
    ]

    public static func render(_ rows: [StatsRow], as format: StatsFormat) -> String {
        switch format {
        case .json: json(rows).serialized() + "\n"
        case .csv: csv(rows)
        case .table: table(rows)
        }
    }

    /// The JSON document `kbtd stats --format json` and `GET /v1/stats` share.
    public static func json(_ rows: [StatsRow]) -> JSONOutput {
        .object([
            ("keys", .int(Int64(rows.count))),
            ("samples", .int(rows.reduce(0) { $0 + $1.samples })),
            ("stats", .array(rows.map(json))),
        ])
    }

    /// The document's opening up to its `stats` array, for output written a page at a time.
    public static func jsonOpening(keys: Int64, samples: Int64) -> String {
        let empty = JSONOutput.object([("keys", .int(keys)), ("samples", .int(samples)), ("stats", .array([]))]).serialized()
        return String(empty.dropLast(2))
    }

    /// The document's closing after the last row.
    public static let jsonClosing = "]}"

    /// One row of the `stats` array.
    public static func json(_ row: StatsRow) -> JSONOutput {
                .object([
                    ("model", .string(row.key.model)),
                    ("os_major", .int(Int64(row.key.osMajor))),
                    ("language", .string(row.key.language)),
                    ("orientation", .string(row.key.orientation.rawValue)),
                    ("keyboard_type", .string(row.key.keyboardType)),
                    ("samples", .int(row.samples)),
                    ("docked_samples", .int(row.dockedSamples)),
                    ("height_mode", .double(row.heightMode)),
                    ("height_p10", .double(row.heightP10)),
                    ("height_p90", .double(row.heightP90)),
                    ("median_show_duration", .double(row.medianShowDuration)),
                    ("curve7_share", .double(row.curve7Share)),
                    ("cold_start_p50_ms", .double(row.coldStartP50)),
                    ("cold_start_p95_ms", .double(row.coldStartP95)),
                    ("cold_start_samples", .int(row.coldStartSamples)),
                    ("preloaded_p50_ms", .double(row.coldStartPreloadedP50)),
                    ("preloaded_p95_ms", .double(row.coldStartPreloadedP95)),
                    ("preloaded_samples", .int(row.coldStartPreloadedSamples)),
                ])
    }

    static func cells(_ row: StatsRow) -> [String] {
        [
            row.key.model, String(row.key.osMajor), row.key.language, row.key.orientation.rawValue, row.key.keyboardType,
            String(row.samples), String(row.dockedSamples), points(row.heightMode), points(row.heightP10), points(row.heightP90),
            fixed(row.medianShowDuration, 3), row.curve7Share.map { fixed($0 * 100, 1) + "%" } ?? "-",
            fixed(row.coldStartP50, 0), fixed(row.coldStartP95, 0), fixed(row.coldStartPreloadedP50, 0), fixed(row.coldStartPreloadedP95, 0),
        ]
    }

    static func csv(_ rows: [StatsRow]) -> String {
        csvHeader + csvRows(rows)
    }

    /// The CSV header line.
    public static var csvHeader: String { columns.joined(separator: ",") + "\n" }

    /// CSV lines of `rows`, without the header.
    public static func csvRows(_ rows: [StatsRow]) -> String {
        var out = ""
        for row in rows {
            out += cells(row).map { $0 == "-" ? "" : csvField($0) }.joined(separator: ",") + "\n"
        }
        return out
    }

    static func csvField(_ field: String) -> String {
        guard field.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" }) else { return field }
        return "\"" + field.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func table(_ rows: [StatsRow]) -> String {
        guard !rows.isEmpty else { return "no samples stored yet\n" }
        // Text columns align left, numbers right.
        var out = TextTable.aligned(columns, rows.map(cells), leftColumns: [0, 2, 3, 4])
        let total = rows.reduce(Int64(0)) { $0 + $1.samples }
        out += "\(rows.count) keys, \(total) samples\n"
        return out
    }

    static func points(_ value: Double?) -> String {
        guard let value else { return "-" }
        return value.rounded() == value ? String(Int(value)) : fixed(value, 1)
    }

    static func fixed(_ value: Double?, _ digits: Int) -> String {
        guard let value else { return "-" }
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let rounded = (value * scale).rounded() / scale
        if digits == 0 { return String(Int(rounded)) }
        let integer = Int(rounded.rounded(.towardZero))
        var fraction = String(Int(((abs(rounded) - Double(abs(integer))) * scale).rounded()))
        fraction = String(repeating: "0", count: max(0, digits - fraction.count)) + fraction
        return (rounded < 0 && integer == 0 ? "-" : "") + "\(integer).\(fraction)"
    }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var copy = self
        while copy.last == " " { copy.removeLast() }
        return copy
    }
}
