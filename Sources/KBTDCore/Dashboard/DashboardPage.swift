import Foundation

/// The dashboard: one self-contained HTML page with inline SVG charts, no
/// script and no external resource, so it works offline, from a file and
/// behind `default-src 'none'`. Its one `<style>` element is allowed by hash
/// (`contentSecurityPolicy`). Pure: data in, string out.
///
///     let html = DashboardPage.render(input)
///
/// Drawn elements carry `data-*` attributes with the exact figures (bins,
/// counts, estimate, percentiles), so a browser test can check the drawing
/// against the database.
public enum DashboardPage {
    /// The `Content-Security-Policy` to serve the page with.
    public static let contentSecurityPolicy =
        "default-src 'none'; style-src '\(styleHash)'; img-src 'none'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

    static let styleHash = "sha256-" + SHA256.base64(SHA256.digest(Array(style.utf8)))

    static let style = """
        body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2433;background:#f5f6f8}
        header{background:#1d2433;color:#fff;padding:14px 24px}
        header h1{font-size:20px;margin:0 0 4px}
        header p{margin:0;color:#c5cad3}
        main{max-width:1180px;margin:0 auto;padding:8px 24px 40px}
        section{background:#fff;border:1px solid #dde1e7;border-radius:8px;padding:12px 16px;margin:16px 0}
        h2{font-size:16px;margin:0 0 4px}
        p.note{color:#5b6475;margin:0 0 8px;font-size:12.5px}
        .panels{display:flex;flex-wrap:wrap;gap:12px}
        .panel{border:1px solid #eceef2;border-radius:6px}
        .pair{display:flex;flex-wrap:wrap;gap:16px}
        table{border-collapse:collapse;font-size:12.5px;width:100%}
        th,td{padding:3px 8px;border-bottom:1px solid #eceef2;text-align:right;white-space:nowrap}
        th:nth-child(-n+5),td:nth-child(-n+5){text-align:left}
        th{color:#5b6475;font-weight:600}
        form{display:flex;gap:12px;align-items:end;flex-wrap:wrap}
        label{display:flex;flex-direction:column;font-size:12px;color:#5b6475}
        select,button{font:inherit;padding:3px 6px}
        .empty{color:#8a93a3;font-style:italic}
        svg text{font-family:inherit}
        .below{color:#c0392b}.above{color:#2e7d32}
        """

    static let barColor = "#4c78a8"
    static let estimateColor = "#d62728"
    static let coldColor = "#f58518"
    static let warmColor = "#54a24b"
    static let basisColors: [EstimateBasis: String] = [
        .modelOSLanguage: "#2e7d32", .modelLanguage: "#66bb6a", .modelLanguageDelta: "#fbc02d", .model: "#fb8c00",
        .screenLanguage: "#8e24aa",
        .default: "#c62828",
    ]

    public static func render(_ input: DashboardInput) -> String {
        let summary = DashboardSummary(input)
        var html = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>kbtd dashboard</title>
            <style>\(style)</style>
            </head><body>
            <header><h1>kbtd dashboard</h1>
            <p>\(escape(input.filter.description)) · \(group(summary.keys)) keys · \(group(summary.samples)) samples · \
            \(input.live ? "served live by kbtd" : "written by kbtd report") at \(utc(input.generatedAt)) UTC</p></header>
            <main>

            """
        html += filterSection(input, summary)
        html += heightSection(input, summary)
        html += basisSection(input)
        html += coldStartSection(summary)
        html += animationSection(summary)
        html += hourlySection(input)
        html += thinKeysSection(input, summary)
        html += "</main></body></html>\n"
        return html
    }

    // MARK: Sections

    static func filterSection(_ input: DashboardInput, _ summary: DashboardSummary) -> String {
        guard input.live else {
            return "<section id=\"filters\"><h2>Filters</h2><p class=\"note\">\(escape(input.filter.description)) "
                + "(chosen with <code>kbtd report --model/--os/--language</code>).</p></section>\n"
        }
        func select(_ name: String, _ label: String, _ listed: [String], hidden: Int, _ selected: String?) -> String {
            var values = listed
            // A list cut to its most-sampled values still offers the chosen one.
            if hidden > 0, let selected, !values.contains(selected) { values = (values + [selected]).sorted() }
            var out = "<label>\(label)<select name=\"\(name)\"><option value=\"\">all</option>"
            for value in values {
                out += "<option value=\"\(escape(value))\"\(value == selected ? " selected" : "")>\(escape(value))</option>"
            }
            if hidden > 0 {
                out += "<option value=\"\" disabled>\(group(hidden)) more with fewer samples: ?\(name)= in the URL</option>"
            }
            return out + "</select></label>"
        }
        return """
            <section id="filters"><form method="get">
            \(select("model", "Model", summary.models, hidden: summary.hiddenModels, input.filter.model))
            \(select("os", "iOS major", summary.osMajors.map(String.init), hidden: summary.hiddenOSMajors,
                     input.filter.osMajor.map(String.init)))
            \(select("language", "Language", summary.languages, hidden: summary.hiddenLanguages, input.filter.language))
            <button type="submit">Apply</button></form></section>

            """
    }

    static func heightSection(_ input: DashboardInput, _ summary: DashboardSummary) -> String {
        guard let model = summary.chosenModel else {
            return "<section id=\"heights\"><h2>Keyboard heights</h2><p class=\"empty\">No docked heights for this filter yet.</p></section>\n"
        }
        var out = """
            <section id="heights" data-model="\(escape(model))"><h2>Keyboard heights: \(escape(model))</h2>
            <p class="note">Docked system heights (accessory removed, 0.5 pt bins), keyboard type <code>default</code>\
            \(input.filter.osMajor.map { ", iOS \($0)" } ?? ", every iOS version"); \
            \(input.filter.model == nil ? "the model with the most samples (pick another above); " : "")\
            the red line is the estimate <code>GET /v1/height</code> serves, with its basis.</p>
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

    static func coldStartSection(_ summary: DashboardSummary) -> String {
        var out = """
            <section id="coldstart"><h2>Cold start: first show after launch</h2>
            <p class="note">Time to the first keyboard show, without and with pre-warming (<code>preloaded</code>), \
            every key of the filter; shares of samples on a log scale. The table lists the keys with most cold-start \
            samples, with the figures <code>kbtd stats</code> prints.</p>

            """
        guard summary.cold.total > 0 || summary.warm.total > 0 else {
            return out + "<p class=\"empty\">No cold-start samples for this filter.</p></section>\n"
        }
        let p50 = (summary.cold.percentile(0.5).map(LogBucket.value), summary.warm.percentile(0.5).map(LogBucket.value))
        let p95 = (summary.cold.percentile(0.95).map(LogBucket.value), summary.warm.percentile(0.95).map(LogBucket.value))
        // One log-scale axis for both charts, so they compare side by side.
        let buckets = Array(summary.coldBuckets.keys) + Array(summary.warmBuckets.keys)
        let low = buckets.min() ?? 0, high = buckets.max() ?? 0
        out += "<div class=\"pair\">"
        out += coldChart("without pre-warming", "cold", summary.coldBuckets, total: summary.cold.total, low: low, high: high, color: coldColor, p50: p50.0, p95: p95.0)
        out += coldChart("with pre-warming", "warm", summary.warmBuckets, total: summary.warm.total, low: low, high: high, color: warmColor, p50: p50.1, p95: p95.1)
        out += "</div>\n"
        if let c50 = p50.0, let w50 = p50.1, let c95 = p95.0, let w95 = p95.1 {
            out += "<p class=\"saving\" data-p50-saving=\"\(c50 - w50)\" data-p95-saving=\"\(c95 - w95)\"><strong>Pre-warming saves "
                + "\(fixed(c50 - w50, 0)) ms at p50 (\(fixed(c50, 0)) → \(fixed(w50, 0)) ms) and \(fixed(c95 - w95, 0)) ms at p95 "
                + "(\(fixed(c95, 0)) → \(fixed(w95, 0)) ms).</strong></p>\n"
        }
        guard !summary.coldStartRows.isEmpty else { return out + "</section>\n" }
        out += """
            <table class="coldstart-keys"><thead><tr><th>model</th><th>os</th><th>language</th><th>orientation</th>\
            <th>type</th><th>cold n</th><th>cold p50</th><th>cold p95</th><th>warm n</th><th>warm p50</th><th>warm p95</th>\
            <th>saving p50</th><th>saving p95</th></tr></thead><tbody>

            """
        for row in summary.coldStartRows {
            let c50 = row.cold.percentile(0.5).map(LogBucket.value) ?? 0, c95 = row.cold.percentile(0.95).map(LogBucket.value) ?? 0
            let w50 = row.warm.percentile(0.5).map(LogBucket.value) ?? 0, w95 = row.warm.percentile(0.95).map(LogBucket.value) ?? 0
            out += "<tr class=\"coldstart-key\" \(keyAttributes(row.key)) data-cold-p50=\"\(c50)\" data-cold-p95=\"\(c95)\" "
                + "data-warm-p50=\"\(w50)\" data-warm-p95=\"\(w95)\" data-saving-p50=\"\(c50 - w50)\" data-saving-p95=\"\(c95 - w95)\">"
                + keyCells(row.key)
                + "<td>\(group(row.cold.total))</td><td>\(fixed(c50, 1))</td><td>\(fixed(c95, 1))</td>"
                + "<td>\(group(row.warm.total))</td><td>\(fixed(w50, 1))</td><td>\(fixed(w95, 1))</td>"
                + "<td>\(fixed(c50 - w50, 1))</td><td>\(fixed(c95 - w95, 1))</td></tr>\n"
        }
        return out + "</tbody></table></section>\n"
    }

    static func coldChart(_ title: String, _ kind: String, _ counts: [Int: Int64], total samples: Int64, low: Int, high: Int, color: String,
                          p50: Double?, p95: Double?) -> String {
        let width = 540.0, height = 200.0, left = 10.0, right = 10.0, top = 30.0, bottom = 160.0
        let plot = width - left - right
        // Buckets are 2 % wide; group them into at most 60 bars.
        let span = high - low + 1
        let groupSize = max(1, Int((Double(span) / 60).rounded(.up)))
        let groups = (span + groupSize - 1) / groupSize
        var shares = [Double](repeating: 0, count: groups)
        for (bucket, count) in counts where bucket >= low && bucket <= high {
            shares[(bucket - low) / groupSize] += Double(count)
        }
        let total = Double(max(samples, 1))
        let maxShare = max(shares.max() ?? 1, 1) / total
        let slot = plot / Double(groups)
        let lowValue = LogBucket.value(low), highValue = LogBucket.value(low + groups * groupSize)
        func x(_ value: Double) -> Double {
            guard highValue > lowValue else { return left }
            return left + plot * (log(value) - log(lowValue)) / (log(highValue) - log(lowValue))
        }
        var svg = """
            <svg class="coldstart" data-kind="\(kind)" data-samples="\(samples)" \
            data-p50="\(p50.map { "\($0)" } ?? "")" data-p95="\(p95.map { "\($0)" } ?? "")" width="\(Int(width))" \
            height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" role="img" aria-label="cold start \(title)">
            <text x="\(left)" y="16" font-size="13" font-weight="600" fill="#1d2433">\(title)</text>
            <text x="\(width - right)" y="16" font-size="11" fill="#5b6475" text-anchor="end">\(group(samples)) samples</text>

            """
        for (i, count) in shares.enumerated() where count > 0 {
            let h = max(1, (bottom - top) * count / total / maxShare)
            svg += "<rect x=\"\(f(left + slot * Double(i)))\" y=\"\(f(bottom - h))\" width=\"\(f(max(1, slot - 1)))\" "
                + "height=\"\(f(h))\" fill=\"\(color)\"/>"
        }
        svg += "\n<line x1=\"\(left)\" x2=\"\(width - right)\" y1=\"\(bottom)\" y2=\"\(bottom)\" stroke=\"#aab1bd\"/>\n"
        for tick in [1.0, 3, 10, 30, 100, 300, 1000, 3000, 10000, 30000] where tick >= lowValue && tick <= highValue {
            svg += "<text x=\"\(f(x(tick)))\" y=\"\(f(bottom + 13))\" font-size=\"10\" fill=\"#5b6475\" text-anchor=\"middle\">"
                + "\(tick >= 1000 ? "\(fixed(tick / 1000, 0)) s" : "\(fixed(tick, 0)) ms")</text>"
        }
        for (name, value, dy) in [("p50", p50, 0.0), ("p95", p95, 12.0)] {
            guard let value else { continue }
            svg += "\n<line x1=\"\(f(x(value)))\" x2=\"\(f(x(value)))\" y1=\"\(top - 4)\" y2=\"\(bottom)\" stroke=\"#1d2433\" "
                + "stroke-dasharray=\"3 3\"/><text x=\"\(f(x(value) + 3))\" y=\"\(f(top + 6 + dy))\" font-size=\"11\" "
                + "fill=\"#1d2433\">\(name) \(fixed(value, 0)) ms</text>"
        }
        return svg + "\n<text x=\"\(left)\" y=\"\(bottom + 32)\" font-size=\"11\" fill=\"#5b6475\">milliseconds, log scale</text></svg>\n"
    }

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
        var day = (first + 86_399) / 86_400 * 86_400
        while day <= latest {
            let x = left + slot * Double((day - first) / 3600)
            out += "<line x1=\"\(f(x))\" x2=\"\(f(x))\" y1=\"\(bottom)\" y2=\"\(bottom + 5)\" stroke=\"#aab1bd\"/>"
                + "<text x=\"\(f(x))\" y=\"\(bottom + 18)\" font-size=\"10\" fill=\"#5b6475\" text-anchor=\"middle\">"
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

    // MARK: Helpers

    static func keyAttributes(_ key: SeriesKey) -> String {
        "data-model=\"\(escape(key.model))\" data-os=\"\(key.osMajor)\" data-language=\"\(escape(key.language))\" "
            + "data-orientation=\"\(key.orientation.rawValue)\" data-keyboard-type=\"\(escape(key.keyboardType))\""
    }

    static func keyCells(_ key: SeriesKey) -> String {
        "<td>\(escape(key.model))</td><td>\(key.osMajor)</td><td>\(escape(key.language))</td>"
            + "<td>\(key.orientation.rawValue)</td><td>\(escape(key.keyboardType))</td>"
    }

    /// Text and attribute values, escaped for HTML.
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }

    /// A coordinate with at most one decimal.
    static func f(_ value: Double) -> String { fixed(value, 1) }

    static func fixed(_ value: Double, _ digits: Int) -> String { String(format: "%.\(digits)f", value) }

    /// 1234567 -> "1,234,567".
    static func group(_ value: Int64) -> String {
        let digits = String(value.magnitude)
        var out = ""
        for (i, digit) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out += "," }
            out.append(digit)
        }
        return (value < 0 ? "-" : "") + out
    }

    static func group(_ value: Int) -> String { group(Int64(value)) }

    /// "2026-11-22 21:00" for Unix seconds.
    static func utc(_ seconds: Int64) -> String {
        let days = Int(seconds.quotient(dividingBy: 86_400)), rest = Int(seconds - Int64(days) * 86_400)
        // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(year)-\(two(month))-\(two(day)) \(two(rest / 3600)):\(two(rest % 3600 / 60))"
    }
}

extension Int64 {
    /// Floor division (rounds toward negative infinity).
    fileprivate func quotient(dividingBy divisor: Int64) -> Int64 {
        let q = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? q - 1 : q
    }
}
