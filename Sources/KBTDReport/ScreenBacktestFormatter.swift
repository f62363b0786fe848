import KBTDCore

/// Renders `kbtd evaluate --screens`: per chain, the (key, screen) cases asked with the key hidden
/// and visible, split by whether the screen's height differs from its key's (table, JSON or CSV).
public enum ScreenBacktestFormatter {
    static let columns = ["chain", "asked", "differs_from_key", "cases", "mean_err_pt", "max_err_pt", "within_0.5pt",
                          "median_screen_samples"]

    public static func render(_ chains: [(chain: String, rows: [ScreenBacktest.Row])], as format: StatsFormat) -> String {
        let lines = chains.flatMap { chain in chain.rows.map { (chain.chain, $0) } }
        switch format {
        case .json:
            return JSONOutput.object([
                ("chains", .array(chains.map { chain in
                    .object([
                        ("chain", .string(chain.chain)),
                        ("rows", .array(chain.rows.map { row in
                            .object([
                                ("asked", .string(row.asked.rawValue)),
                                ("differs_from_key", .bool(row.differs)),
                                ("cases", .int(Int64(row.cases))),
                                ("mean_abs_error", .double(row.meanError)),
                                ("max_abs_error", .double(row.maxError)),
                                ("within_half_point", .double(row.within)),
                                ("median_screen_samples", .int(row.medianSamples)),
                            ])
                        })),
                    ])
                })),
            ]).serialized() + "\n"
        case .csv:
            var out = columns.joined(separator: ",") + "\n"
            for (chain, row) in lines {
                out += [chain, row.asked.rawValue, row.differs ? "yes" : "no", String(row.cases), "\(row.meanError)",
                        "\(row.maxError)", "\(row.within)", String(row.medianSamples)]
                    .map(StatsFormatter.csvField).joined(separator: ",") + "\n"
            }
            return out
        case .table:
            guard !lines.isEmpty else { return "no key has a screen with enough samples of its own to evaluate\n" }
            return TextTable.aligned(columns, lines.map { chain, row in
                [chain, row.asked.rawValue, row.differs ? "yes" : "no", String(row.cases), StatsFormatter.fixed(row.meanError, 2),
                 StatsFormatter.fixed(row.maxError, 1), StatsFormatter.fixed(row.within * 100, 1) + "%", String(row.medianSamples)]
            }, leftColumns: [0, 1, 2]) + "errors in points against the mode of each screen's own votes\n"
        }
    }

    /// Every case (`kbtd evaluate --screens --cases`).
    public static func casesCSV(_ chains: [(chain: String, cases: [ScreenBacktest.Case])]) -> String {
        var out = "chain,model,os,language,orientation,keyboard_type,screen,asked,basis,truth_pt,key_mode_pt,answer_pt,error_pt,screen_samples\n"
        for (chain, cases) in chains {
            for item in cases {
                out += [
                    chain, item.key.model, String(item.key.osMajor), item.key.language, item.key.orientation.rawValue,
                    item.key.keyboardType, item.screen.description, item.asked.rawValue, item.basis.rawValue, "\(item.truth)",
                    "\(item.keyMode)", "\(item.answer)", "\(abs(item.answer - item.truth))", String(item.samples),
                ].map(StatsFormatter.csvField).joined(separator: ",") + "\n"
            }
        }
        return out
    }
}
