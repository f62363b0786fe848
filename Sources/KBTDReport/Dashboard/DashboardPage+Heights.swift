import Foundation
import KBTDCore

/// Heights: the chosen model's histograms with the served estimate marked.
extension DashboardPage {
    static func heightSection(_ input: DashboardInput, _ summary: DashboardSummary) -> String {
        guard let model = summary.chosenModel else {
            return "<section id=\"heights\"><h2>Keyboard heights</h2><p class=\"empty\">No docked heights for this filter yet.</p></section>\n"
        }
        // Without an iOS major the panels ask as a phone that sends no `os` would, which /v1/height
        // answers from model+language at best: say so, or the basis reads as a contradiction.
        let withoutOS = input.filter.osMajor != nil ? "" : " (for a question without <code>os</code>, so "
            + "<code>model+language</code> at best; a phone sends its <code>os</code> and may get <code>model+os+language</code>: "
            + "pick an iOS major above to see that answer)"
        var out = """
            <section id="heights" data-model="\(escape(model))"><h2>Keyboard heights: \(escape(model))</h2>
            <p class="note">Docked system heights (accessory removed, 0.5 pt bins), keyboard type <code>default</code>\
            \(input.filter.osMajor.map { ", iOS \($0)" } ?? ", every iOS version"); \
            \(input.filter.model == nil ? "the model with the most samples (pick another above); " : "")\
            the red line is the estimate <code>GET /v1/height</code> serves, with its basis\(withoutOS).</p>
            <div class="panels">

            """
        for panel in summary.panels { out += histogram(panel, model: model) }
        out += "</div>"
        if summary.hiddenPanels > 0 {
            out += "<p class=\"note\">\(summary.hiddenPanels) more language/orientation panels; pick a language above.</p>"
        }
        return out + "</section>\n"
    }

    static func histogram(_ panel: DashboardSummary.HeightPanel, model: String) -> String {
        let width = 360.0, height = 200.0, left = 10.0, right = 10.0, top = 46.0, bottom = 160.0
        let plot = width - left - right
        let slot = plot / Double(max(panel.bins.count, 1))
        let barWidth = min(36, max(1.5, slot * 0.8))
        let maxCount = Double(panel.bins.map(\.count).max() ?? 1)
        let estimate = panel.estimate
        let estimateBin = HeightBin.halfPoints(estimate.height)
        var svg = """
            <svg class="histogram" data-language="\(escape(panel.language))" data-orientation="\(panel.orientation.rawValue)" \
            data-bins="\(panel.bins.count)" data-samples="\(panel.total)" width="\(Int(width))" height="\(Int(height))" \
            viewBox="0 0 \(Int(width)) \(Int(height))" role="img" aria-label="heights of \(escape(model)) \
            \(escape(panel.language)) \(panel.orientation.rawValue)">
            <text x="\(left)" y="16" font-size="13" font-weight="600" fill="#1d2433">\(escape(panel.language)) · \
            \(panel.orientation.rawValue)</text>
            <text x="\(width - right)" y="16" font-size="11" fill="#5b6475" text-anchor="end">\(group(panel.total)) samples</text>

            """
        let labelEvery = max(1, Int((Double(panel.bins.count) / 7).rounded(.up)))
        for (i, bin) in panel.bins.enumerated() {
            let x = left + slot * Double(i) + (slot - barWidth) / 2
            let h = max(1, (bottom - top) * Double(bin.count) / maxCount)
            let points = HeightBin.points(bin.halfPoints)
            svg += "<rect class=\"bar\" data-bin=\"\(points)\" data-count=\"\(bin.count)\" x=\"\(f(x))\" y=\"\(f(bottom - h))\" "
                + "width=\"\(f(barWidth))\" height=\"\(f(h))\" fill=\"\(bin.halfPoints == estimateBin ? estimateColor : barColor)\" "
                + "fill-opacity=\"\(bin.halfPoints == estimateBin ? "0.85" : "1")\">"
                + "<title>\(fixed(points, 1)) pt: \(group(bin.count)) samples</title></rect>\n"
            if i % labelEvery == 0 {
                svg += "<text x=\"\(f(x + barWidth / 2))\" y=\"\(f(bottom + 13))\" font-size=\"10\" fill=\"#5b6475\" "
                    + "text-anchor=\"middle\">\(fixed(points, points.rounded() == points ? 0 : 1))</text>\n"
            }
        }
        // The estimate's position: on its bin, or where it would sort among the bins.
        let position: Double
        if let i = panel.bins.firstIndex(where: { $0.halfPoints == estimateBin }) {
            position = left + slot * (Double(i) + 0.5)
        } else {
            let i = panel.bins.firstIndex { $0.halfPoints > estimateBin } ?? panel.bins.count
            position = left + slot * Double(i)
        }
        let anchor = position < width / 3 ? "start" : (position > width * 2 / 3 ? "end" : "middle")
        svg += """
            <g class="estimate" data-height="\(estimate.height)" data-basis="\(estimate.basis.rawValue)" \
            data-samples="\(estimate.samples)">
            <line x1="\(f(position))" x2="\(f(position))" y1="\(top - 8)" y2="\(bottom)" stroke="\(estimateColor)" \
            stroke-width="2" stroke-dasharray="4 3"/>
            <text x="\(f(position))" y="\(top - 11)" font-size="11" fill="\(estimateColor)" text-anchor="\(anchor)">\
            estimate \(fixed(estimate.height, 1)) pt</text></g>
            <line x1="\(left)" x2="\(width - right)" y1="\(bottom)" y2="\(bottom)" stroke="#aab1bd"/>
            <text x="\(left)" y="\(bottom + 32)" font-size="11" fill="#5b6475">basis \(estimate.basis.rawValue) · \
            p10 \(fixed(estimate.p10, 1)) · p90 \(fixed(estimate.p90, 1))</text>
            </svg>

            """
        return "<div class=\"panel\">\(svg)</div>\n"
    }
}
