import KBTDCore

/// Renders `kbtd evaluate --replay` (`Replay.Result`) as two aligned tables, JSON or CSV.
public enum ReplayFormatter {
    static let servedColumns = ["basis", "samples", "mae_pt", "within_0.5pt"]
    static let changeColumns = [
        "change", "served_from", "changes", "median_samples", "max_samples", "median_time", "max_time", "mae_meanwhile_pt",
    ]

    public static func render(_ result: Replay.Result, chain: String, resolution: ReplayTimeline.Resolution,
                              as format: StatsFormat) -> String {
        switch format {
        case .json: json(result, chain: chain, resolution: resolution).serialized() + "\n"
        case .csv: csv(result)
        case .table: table(result, chain: chain, resolution: resolution)
        }
    }

    public static func json(_ result: Replay.Result, chain: String, resolution: ReplayTimeline.Resolution) -> JSONOutput {
        .object([
            ("chain", .string(chain)),
            ("resolution", .string(resolution.rawValue)),
            ("steps", .int(Int64(result.steps))),
            ("samples", .int(result.samples)),
            ("scored_samples", .int(result.scoredSamples)),
            ("served", .array(result.served.map { row in
                .object([
                    ("basis", .string(row.basis.rawValue)), ("samples", .int(row.samples)),
                    ("mean_abs_error", .double(row.meanError)), ("within_half_point", .double(row.withinShare)),
                ])
            })),
            ("changes", .array(Replay.changeRows(result.changes).map { row in
                .object([
                    ("release_wide", .bool(row.releaseWide)),
                    ("served_from", row.basis.map { .string($0.rawValue) } ?? .null), ("changes", .int(Int64(row.changes))),
                    ("median_samples", .int(row.medianSamples)), ("max_samples", .int(row.maxSamples)),
                    ("median_seconds", .int(row.medianSeconds)), ("max_seconds", .int(row.maxSeconds)),
                    ("mean_abs_error_meanwhile", .double(row.meanError)),
                ])
            })),
        ])
    }

    /// Every change, for digging in (`kbtd evaluate --replay --cases`): one CSV line each.
    public static func changesCSV(_ changes: [Replay.Change]) -> String {
        var out = "model,os,language,orientation,keyboard_type,from_pt,to_pt,start,found,seconds,change,served_from,samples,wrong_samples,mae_meanwhile_pt\n"
        for change in changes {
            let key = change.cell.series
            out += [
                key.model, "\(key.osMajor).\(change.cell.minor)", key.language, key.orientation.rawValue, key.keyboardType,
                "\(HeightBin.points(change.from))", "\(HeightBin.points(change.to))", String(change.start),
                change.found.map { String($0) } ?? "", change.found.map { String($0 - change.start) } ?? "",
                change.releaseWide ? "release-wide" : "one key", change.basis?.rawValue ?? "not found", String(change.samples), String(change.wrongSamples), "\(change.meanError)",
            ].map(StatsFormatter.csvField).joined(separator: ",") + "\n"
        }
        return out
    }

    static func servedCells(_ row: Replay.Served) -> [String] {
        [row.basis.rawValue, String(row.samples), StatsFormatter.fixed(row.meanError, 2),
         StatsFormatter.fixed(row.withinShare * 100, 1) + "%"]
    }

    static func changeCells(_ row: Replay.ChangeRow) -> [String] {
        let found = row.basis != nil
        return [row.releaseWide ? "release-wide" : "one key", row.basis?.rawValue ?? "not found", String(row.changes), String(row.medianSamples), String(row.maxSamples),
                found ? duration(row.medianSeconds) : "-", found ? duration(row.maxSeconds) : "-",
                StatsFormatter.fixed(row.meanError, 2)]
    }

    /// Seconds as `45s`, `12m05s`, `3h20m` or `2d04h`.
    static func duration(_ seconds: Int64) -> String {
        switch seconds {
        case ..<60: "\(seconds)s"
        case ..<3_600: "\(seconds / 60)m" + twoDigits(seconds % 60) + "s"
        case ..<86_400: "\(seconds / 3_600)h" + twoDigits(seconds % 3_600 / 60) + "m"
        default: "\(seconds / 86_400)d" + twoDigits(seconds % 86_400 / 3_600) + "h"
        }
    }

    private static func twoDigits(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }

    static func csv(_ result: Replay.Result) -> String {
        var out = "table," + changeColumns.joined(separator: ",") + "\n"
        for row in Replay.changeRows(result.changes) {
            out += (["changes", row.releaseWide ? "release-wide" : "one key", row.basis?.rawValue ?? "not found", String(row.changes), String(row.medianSamples),
                     String(row.maxSamples), String(row.medianSeconds), String(row.maxSeconds), "\(row.meanError)"])
                .map(StatsFormatter.csvField).joined(separator: ",") + "\n"
        }
        out += "table,," + servedColumns.joined(separator: ",") + "\n"
        for row in result.served {
            out += (["served", "", row.basis.rawValue, String(row.samples), "\(row.meanError)", "\(row.withinShare)"])
                .map(StatsFormatter.csvField).joined(separator: ",") + "\n"
        }
        return out
    }

    static func table(_ result: Replay.Result, chain: String, resolution: ReplayTimeline.Resolution) -> String {
        guard result.steps > 0 else { return "nothing to replay: no counts with a release and a day (kbtd 0.x data only)\n" }
        var out = "changes (a key's height on a release differs from what its phones measured before; release-wide: the same change on "
            + "at least 3 models), by the basis that served the new height:\n"
        let rows = Replay.changeRows(result.changes)
        out += rows.isEmpty ? "no change\n" : TextTable.aligned(changeColumns, rows.map(changeCells))
        out += "\nwhat the replayed phones were served, by basis:\n"
        out += TextTable.aligned(servedColumns, result.served.map(servedCells))
        out += "\(result.scoredSamples) of \(result.samples) docked samples scored in \(result.steps) steps "
            + "(\(resolution == .batches ? "batch receipts, to the second" : "batch receipts where kept, else whole UTC days")); chain: \(chain)\n"
        return out
    }
}
