/// Plain-text tables for the terminal (`kbtd stats`, `kbtd evaluate`): columns padded to their widest cell,
/// two spaces apart; the header and `leftColumns` left-aligned, the other cells right-aligned.
enum TextTable {
    static func aligned(_ columns: [String], _ rows: [[String]], leftColumns: Set<Int> = [0]) -> String {
        let all = [columns] + rows
        let widths = columns.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        var out = ""
        for (i, line) in all.enumerated() {
            let padded = line.enumerated().map { column, cell in
                let pad = String(repeating: " ", count: widths[column] - cell.count)
                return leftColumns.contains(column) || i == 0 ? cell + pad : pad + cell
            }
            out += padded.joined(separator: "  ").trimmingTrailingSpaces() + "\n"
        }
        return out
    }
}
