import Foundation
import KBTDCore

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
        html += screenSection(input, summary)
        html += changeSection(input, summary)
        html += basisSection(input)
        html += coldStartSection(summary)
        html += animationSection(summary)
        html += hourlySection(input)
        html += thinKeysSection(input, summary)
        html += "</main></body></html>\n"
        return html
    }
}
