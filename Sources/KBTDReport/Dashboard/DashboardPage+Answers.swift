import Foundation
import KBTDCore

/// Height answers by basis (a running daemon's counts).
extension DashboardPage {
    static func basisSection(_ input: DashboardInput) -> String {
        var out = "<section id=\"basis\"><h2>Height answers by basis</h2>\n"
        guard let answers = input.answersByBasis else {
            return out + "<p class=\"empty\">Served answers are counted by a running daemon since its start "
                + "(<code>kbtd_height_answers_total</code>); a report written from the database file has none.</p></section>\n"
        }
        out += "<p class=\"note\">Which level of the fallback chain answered, counted since the daemon started at "
            + "\(utc(answers.since)) UTC: how many clients get an exact answer and how many a fallback. Left: "
            + "<code>GET /v1/height</code> answers (304 revalidations included); right: the estimates inside "
            + "<code>GET /v1/heights</code> answers, which the client library fetches at launch (one per language, "
            + "orientation and type). Not filtered.</p>\n<div class=\"pair\">"
        out += basisChart("basis", "GET /v1/height answers", answers.counts)
        out += basisChart("basis-model", "estimates in GET /v1/heights answers", answers.modelEstimates)
        return out + "</div></section>\n"
    }

    static func basisChart(_ kind: String, _ title: String, _ counts: [EstimateBasis: Int64]) -> String {
        let total = counts.values.reduce(0, +)
        let width = 540.0, rowHeight = 26.0, labelWidth = 160.0, barSpace = 260.0, top = 26.0
        let height = top + rowHeight * Double(EstimateBasis.allCases.count) + 8
        var out = "<svg class=\"\(kind)-chart\" data-total=\"\(total)\" width=\"\(Int(width))\" height=\"\(Int(height))\" "
            + "viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" aria-label=\"\(title) by basis\">\n"
            + "<text x=\"0\" y=\"16\" font-size=\"13\" font-weight=\"600\" fill=\"#1d2433\">\(title)</text>"
            + "<text x=\"\(width - 10)\" y=\"16\" font-size=\"11\" fill=\"#5b6475\" text-anchor=\"end\">\(group(total)) in all</text>\n"
        for (i, basis) in EstimateBasis.allCases.enumerated() {
            let count = counts[basis] ?? 0
            let share = total > 0 ? Double(count) / Double(total) : 0
            let y = top + rowHeight * Double(i)
            out += "<text x=\"0\" y=\"\(f(y + 17))\" font-size=\"12\" fill=\"#1d2433\">\(basis.rawValue)</text>"
                + "<rect x=\"\(labelWidth)\" y=\"\(f(y + 4))\" width=\"\(barSpace)\" height=\"\(rowHeight - 8)\" fill=\"#eceef2\"/>"
                + "<rect class=\"\(kind)\" data-basis=\"\(basis.rawValue)\" data-count=\"\(count)\" x=\"\(labelWidth)\" "
                + "y=\"\(f(y + 4))\" width=\"\(f(max(share * barSpace, count > 0 ? 1 : 0)))\" height=\"\(rowHeight - 8)\" "
                + "fill=\"\(basisColors[basis] ?? "#777777")\"/>"
                + "<text x=\"\(f(labelWidth + barSpace + 8))\" y=\"\(f(y + 17))\" font-size=\"12\" fill=\"#5b6475\">"
                + "\(fixed(share * 100, 1)) % · \(group(count))</text>\n"
        }
        return out + "</svg>\n"
    }
}
