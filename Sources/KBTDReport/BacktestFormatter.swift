import KBTDCore

/// Renders `kbtd evaluate` rows as an aligned table, JSON or CSV (the formats of `kbtd stats`).
public enum BacktestFormatter {
    static let columns = [
        "basis", "cases", "mae_pt", "p90_pt", "within_0.5pt", "default_mae_pt", "default_p90_pt", "default_within_0.5pt",
    ]

    public static func render(_ rows: [ChainBacktest.Row], chain: String, as format: StatsFormat) -> String {
        switch format {
        case .json: json(rows, chain: chain).serialized() + "\n"
        case .csv: csv(rows)
        case .table: table(rows, chain: chain)
        }
    }

    public static func json(_ rows: [ChainBacktest.Row], chain: String) -> JSONOutput {
        .object([
            ("chain", .string(chain)),
            ("cases", .int(Int64(rows.reduce(0) { $0 + $1.cases }))),
            ("levels", .array(rows.map { row in
                .object([
                    ("basis", .string(row.basis.rawValue)),
                    ("cases", .int(Int64(row.cases))),
                    ("mean_abs_error", .double(row.meanAbsoluteError)),
                    ("p90_abs_error", .double(row.p90AbsoluteError)),
                    ("within_half_point", .double(row.withinHalfPoint)),
                    ("default_mean_abs_error", .double(row.defaultMeanAbsoluteError)),
                    ("default_p90_abs_error", .double(row.defaultP90AbsoluteError)),
                    ("default_within_half_point", .double(row.defaultWithinHalfPoint)),
                ])
            })),
        ])
    }

    static func cells(_ row: ChainBacktest.Row) -> [String] {
        [
            row.basis.rawValue, String(row.cases),
            StatsFormatter.fixed(row.meanAbsoluteError, 2), StatsFormatter.fixed(row.p90AbsoluteError, 1),
            StatsFormatter.fixed(row.withinHalfPoint * 100, 1) + "%",
            StatsFormatter.fixed(row.defaultMeanAbsoluteError, 2), StatsFormatter.fixed(row.defaultP90AbsoluteError, 1),
            StatsFormatter.fixed(row.defaultWithinHalfPoint * 100, 1) + "%",
        ]
    }

    static func csv(_ rows: [ChainBacktest.Row]) -> String {
        var out = columns.joined(separator: ",") + "\n"
        for row in rows {
            out += [
                row.basis.rawValue, String(row.cases), "\(row.meanAbsoluteError)", "\(row.p90AbsoluteError)",
                "\(row.withinHalfPoint)", "\(row.defaultMeanAbsoluteError)", "\(row.defaultP90AbsoluteError)",
                "\(row.defaultWithinHalfPoint)",
            ].map(StatsFormatter.csvField).joined(separator: ",") + "\n"
        }
        return out
    }

    /// Every case, for digging into a level's errors (`kbtd evaluate --cases`).
    public static func casesCSV(_ cases: [ChainBacktest.Case]) -> String {
        var out = "model,os,language,orientation,keyboard_type,hidden,basis,truth_pt,answer_pt,error_pt,default_error_pt\n"
        for item in cases {
            out += [
                item.key.model, String(item.key.osMajor), item.key.language, item.key.orientation.rawValue, item.key.keyboardType,
                item.hidden.rawValue, item.basis.rawValue, "\(item.truth)", "\(item.answer)", "\(abs(item.answer - item.truth))",
                "\(abs(item.defaultAnswer - item.truth))",
            ].map(StatsFormatter.csvField).joined(separator: ",") + "\n"
        }
        return out
    }

    static func table(_ rows: [ChainBacktest.Row], chain: String) -> String {
        guard !rows.isEmpty else { return "no key has enough samples to evaluate\n" }
        var out = TextTable.aligned(columns, rows.map(cells))
        out += "\(rows.reduce(0) { $0 + $1.cases }) answers (chain: \(chain)); errors in points against each key's own mode\n"
        return out
    }
}
