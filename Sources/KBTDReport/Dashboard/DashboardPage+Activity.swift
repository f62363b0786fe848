import Foundation
import KBTDCore

/// Animations, hourly ingest and the thinnest keys.
extension DashboardPage {
    static func animationSection(_ summary: DashboardSummary) -> String {
        var out = """
            <section id="animation"><h2>Animation</h2>
            <p class="note">Share of samples (show, hide, change) by animation duration and by curve \
            (7 is the keyboard's spring).</p>

            """
        guard summary.animationTotal > 0 else { return out + "<p class=\"empty\">No samples for this filter.</p></section>\n" }
        out += "<div class=\"pair\">"
        out += shareChart("durations", "duration-ms",
                          summary.durations.map { ("\(fixed(Double($0.value) / 1000, 3)) s", $0.value, $0.count) },
                          total: summary.animationTotal, color: barColor)
        out += shareChart("curves", "curve", summary.curves.map { ("curve \($0.value)", $0.value, $0.count) },
                          total: summary.animationTotal, color: "#7b5ea7")
        return out + "</div></section>\n"
    }

    static func shareChart(_ name: String, _ attribute: String, _ rows: [(label: String, value: Int, count: Int64)], total: Int64,
                           color: String) -> String {
        let width = 540.0, rowHeight = 24.0, labelWidth = 90.0, barSpace = 330.0
        let height = rowHeight * Double(rows.count) + 8
        var svg = "<svg class=\"animation-\(name)\" width=\"\(Int(width))\" height=\"\(Int(height))\" "
            + "viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" aria-label=\"animation \(name)\">\n"
        for (i, row) in rows.enumerated() {
            let share = Double(row.count) / Double(max(total, 1))
            let y = 4 + rowHeight * Double(i)
            svg += "<text x=\"0\" y=\"\(f(y + 16))\" font-size=\"12\" fill=\"#1d2433\">\(row.label)</text>"
                + "<rect data-\(attribute)=\"\(row.value)\" data-count=\"\(row.count)\" x=\"\(labelWidth)\" y=\"\(f(y + 4))\" "
                + "width=\"\(f(max(1, share * barSpace)))\" height=\"\(rowHeight - 8)\" fill=\"\(color)\"/>"
                + "<text x=\"\(f(labelWidth + barSpace + 8))\" y=\"\(f(y + 16))\" font-size=\"12\" fill=\"#5b6475\">"
                + "\(fixed(share * 100, 1)) %</text>\n"
        }
        return svg + "</svg>\n"
    }

    static func hourlySection(_ input: DashboardInput) -> String {
        let hours = 168
        let latest = max(input.hourly.map(\.hour).max() ?? 0, input.generatedAt / 3600 * 3600)
        let first = latest - Int64(hours - 1) * 3600
        let shown = input.hourly.filter { $0.hour >= first && $0.hour <= latest }
        var out = """
            <section id="hourly"><h2>Samples ingested per hour</h2>
            <p class="note">Accepted samples of stored batches per UTC hour, the last 7 days (all models: the filter does \
            not apply); kept as long as batch ids (<code>batch_retention_days</code>).</p>

            """
        guard !shown.isEmpty else { return out + "<p class=\"empty\">No batches stored in the last 7 days.</p></section>\n" }
        let width = 1120.0, height = 190.0, left = 50.0, right = 10.0, top = 14.0, bottom = 150.0
        let slot = (width - left - right) / Double(hours)
        let peak = max(shown.map(\.samples).max() ?? 1, 1)
        let total = shown.reduce(Int64(0)) { $0 + $1.samples }
        out += "<svg class=\"hourly\" data-hours=\"\(shown.count)\" data-samples=\"\(total)\" width=\"\(Int(width))\" "
            + "height=\"\(Int(height))\" viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" aria-label=\"samples per hour\">\n"
            + "<text x=\"\(left - 6)\" y=\"\(top + 4)\" font-size=\"10\" fill=\"#5b6475\" text-anchor=\"end\">\(group(peak))</text>"
            + "<text x=\"\(left - 6)\" y=\"\(bottom)\" font-size=\"10\" fill=\"#5b6475\" text-anchor=\"end\">0</text>\n"
        for entry in shown {
            let i = Double((entry.hour - first) / 3600)
            let h = max(1, (bottom - top) * Double(entry.samples) / Double(peak))
            out += "<rect class=\"hour\" data-hour=\"\(entry.hour)\" data-samples=\"\(entry.samples)\" data-batches=\"\(entry.batches)\" "
                + "x=\"\(f(left + slot * i))\" y=\"\(f(bottom - h))\" width=\"\(f(max(1, slot - 1)))\" height=\"\(f(h))\" "
                + "fill=\"\(barColor)\"><title>\(utc(entry.hour)) UTC: \(group(entry.samples)) samples in "
                + "\(group(entry.batches)) batches</title></rect>"
        }
        out += "\n<line x1=\"\(left)\" x2=\"\(width - right)\" y1=\"\(bottom)\" y2=\"\(bottom)\" stroke=\"#aab1bd\"/>\n"
        // A date label (about 56 px) centred on its tick, or kept inside the chart near either edge.
        func anchor(_ x: Double) -> String { x + 30 > width - right ? "end" : x - 30 < left ? "start" : "middle" }
        var day = (first + 86_399) / 86_400 * 86_400
        while day <= latest {
            let x = left + slot * Double((day - first) / 3600)
            out += "<line x1=\"\(f(x))\" x2=\"\(f(x))\" y1=\"\(bottom)\" y2=\"\(bottom + 5)\" stroke=\"#aab1bd\"/>"
                + "<text x=\"\(f(x))\" y=\"\(bottom + 18)\" font-size=\"10\" fill=\"#5b6475\" text-anchor=\"\(anchor(x))\">"
                + "\(String(utc(day).prefix(10)))</text>"
            day += 86_400
        }
        return out + "\n<text x=\"\(left)\" y=\"\(bottom + 34)\" font-size=\"11\" fill=\"#5b6475\">\(group(total)) samples in "
            + "the last 7 days; peak \(group(peak)) per hour</text></svg></section>\n"
    }

    static func thinKeysSection(_ input: DashboardInput, _ summary: DashboardSummary) -> String {
        var out = """
            <section id="thin"><h2>Thinnest keys</h2>
            <p class="note">Keys whose docked samples are closest to <code>min_samples</code> (\(input.minSamples)): below it \
            the key's own level cannot answer and the fallback chain does; just above it one more source of noise \
            moves the answer. A level also needs enough distinct sources.</p>

            """
        guard !summary.thinKeys.isEmpty else { return out + "<p class=\"empty\">No docked heights for this filter.</p></section>\n" }
        out += "<table class=\"thin-keys\"><thead><tr><th>model</th><th>os</th><th>language</th><th>orientation</th><th>type</th>"
            + "<th>docked samples</th><th></th><th>level</th></tr></thead><tbody>\n"
        let scale = Double(max(input.minSamples * 2, 1))
        for thin in summary.thinKeys {
            let below = thin.docked < input.minSamples
            let barWidth = min(120, 120 * Double(thin.docked) / scale)
            out += "<tr class=\"thin-key\" \(keyAttributes(thin.key)) data-docked=\"\(thin.docked)\">\(keyCells(thin.key))"
                + "<td>\(group(thin.docked))</td><td><svg width=\"124\" height=\"12\" viewBox=\"0 0 124 12\">"
                + "<rect x=\"0\" y=\"2\" width=\"\(f(barWidth))\" height=\"8\" fill=\"\(below ? estimateColor : warmColor)\"/>"
                + "<line x1=\"60\" x2=\"60\" y1=\"0\" y2=\"12\" stroke=\"#1d2433\"/></svg></td>"
                + "<td class=\"\(below ? "below" : "above")\">\(below ? "below min_samples" : "answers")</td></tr>\n"
        }
        return out + "</tbody></table></section>\n"
    }
}
