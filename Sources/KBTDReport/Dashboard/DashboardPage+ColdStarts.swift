import Foundation
import KBTDCore

/// Cold starts: cold and preloaded (warm) histograms per key.
extension DashboardPage {
    static func coldStartSection(_ summary: DashboardSummary) -> String {
        var out = """
            <section id="coldstart"><h2>Cold start: first show after launch</h2>
            <p class="note">Time to the first keyboard show, without and with pre-warming (<code>preloaded</code>), \
            every key of the filter; shares of samples on a log scale. The table lists the keys with the most cold-start \
            samples that have them both without and with pre-warming, with the figures <code>kbtd stats</code> prints.</p>

            """
        guard summary.cold.total > 0 || summary.warm.total > 0 else {
            return out + "<p class=\"empty\">No cold-start samples for this filter.</p></section>\n"
        }
        let p50 = (summary.cold.percentile(0.5).map(LogBucket.value), summary.warm.percentile(0.5).map(LogBucket.value))
        let p95 = (summary.cold.percentile(0.95).map(LogBucket.value), summary.warm.percentile(0.95).map(LogBucket.value))
        // One log-scale axis for both charts, so they compare side by side.
        let buckets = Array(summary.coldBuckets.keys) + Array(summary.warmBuckets.keys)
        var low = buckets.min() ?? 0, high = buckets.max() ?? 0
        // At least a factor of ten around the data, so one key's few buckets are bars on an axis with
        // ticks, not one bar as wide as the chart.
        let decade = LogBucket.index(10) - LogBucket.index(1)
        if high - low < decade {
            let pad = decade - (high - low)
            low -= pad / 2
            high += pad - pad / 2
        }
        out += "<div class=\"pair\">"
        out += coldChart("without pre-warming", "cold", summary.coldBuckets, total: summary.cold.total, low: low, high: high, color: coldColor, p50: p50.0, p95: p95.0)
        out += coldChart("with pre-warming", "warm", summary.warmBuckets, total: summary.warm.total, low: low, high: high, color: warmColor, p50: p50.1, p95: p95.1)
        out += "</div>\n"
        if let c50 = p50.0, let w50 = p50.1, let c95 = p95.0, let w95 = p95.1 {
            out += "<p class=\"saving\" data-p50-saving=\"\(c50 - w50)\" data-p95-saving=\"\(c95 - w95)\"><strong>Pre-warming saves "
                + "\(fixed(c50 - w50, 0)) ms at p50 (\(fixed(c50, 0)) → \(fixed(w50, 0)) ms) and \(fixed(c95 - w95, 0)) ms at p95 "
                + "(\(fixed(c95, 0)) → \(fixed(w95, 0)) ms).</strong></p>\n"
        }
        guard !summary.coldStartRows.isEmpty else {
            return out + "<p class=\"empty coldstart-keys\">No key has cold starts both without and with pre-warming yet: "
                + "the table compares the two.</p></section>\n"
        }
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
        // p50 labelled left of its line and p95 right of its own, so the two never overlap; one label
        // when they round to the same millisecond; a label that would leave the chart goes inside it.
        var marks: [(label: String, value: Double, leftOfLine: Bool)] = []
        if let p50, let p95, fixed(p50, 0) == fixed(p95, 0) {
            marks = [("p50, p95", p50, false)]
        } else {
            if let p50 { marks.append(("p50", p50, p95 != nil)) }
            if let p95 { marks.append(("p95", p95, false)) }
        }
        for mark in marks {
            let at = x(mark.value)
            let leftOfLine = mark.leftOfLine ? at - 75 >= 0 : at + 75 > width
            svg += "\n<line x1=\"\(f(at))\" x2=\"\(f(at))\" y1=\"\(top - 4)\" y2=\"\(bottom)\" stroke=\"#1d2433\" "
                + "stroke-dasharray=\"3 3\"/><text x=\"\(f(leftOfLine ? at - 3 : at + 3))\" y=\"\(f(top + 6))\" font-size=\"11\" "
                + "fill=\"#1d2433\" text-anchor=\"\(leftOfLine ? "end" : "start")\">\(mark.label) \(fixed(mark.value, 0)) ms</text>"
        }
        return svg + "\n<text x=\"\(left)\" y=\"\(bottom + 32)\" font-size=\"11\" fill=\"#5b6475\">milliseconds, log scale</text></svg>\n"
    }
}
