import KBTDCore

/// The chosen model's screens (Display Zoom renders a second, smaller one) and the answers that
/// differ on each from the model's usual ones.
extension DashboardPage {
    static func screenSection(_ input: DashboardInput, _ summary: DashboardSummary) -> String {
        guard let model = summary.chosenModel else { return "" }
        let screens = input.screens(model)
        var out = """
            <section id="screens" data-model="\(escape(model))"><h2>Screens: \(escape(model))</h2>
            <p class="note">The screens this model's phones reported (<code>device.screen</code>, batches per screen): \
            a phone with Display Zoom renders a smaller screen and has another keyboard height. Per screen, the \
            answers <code>GET /v1/height</code> serves with <code>screen=</code> that screen where they differ from \
            the panels' estimates above (a screen's own height needs a level's support on that screen).</p>

            """
        guard !screens.isEmpty else {
            return out + "<p class=\"empty\">No phone of this model reported its screen.</p></section>\n"
        }
        let total = screens.reduce(0) { $0 + $1.reports }
        out += "<table class=\"screens\"><thead><tr><th>screen</th><th>reports</th><th>share</th>"
            + "<th>answers that differ (usual)</th></tr></thead><tbody>\n"
        for entry in screens {
            var differing: [String] = []
            for panel in summary.panels {
                let query = HeightQuery(model: model, language: panel.language, osMajor: input.filter.osMajor,
                                        orientation: panel.orientation, keyboardType: "default", screen: entry.screen)
                let answer = input.estimate(query)
                guard answer.height != panel.estimate.height else { continue }
                differing.append("<span class=\"screen-answer\" data-language=\"\(escape(panel.language))\" "
                    + "data-orientation=\"\(panel.orientation.rawValue)\" data-height=\"\(answer.height)\" "
                    + "data-usual=\"\(panel.estimate.height)\" data-basis=\"\(answer.basis.rawValue)\">"
                    + "\(escape(panel.language)) \(panel.orientation.rawValue) \(fixed(answer.height, 1)) pt "
                    + "(\(fixed(panel.estimate.height, 1)))</span>")
            }
            out += "<tr class=\"screen\" data-screen=\"\(entry.screen)\" data-reports=\"\(entry.reports)\" "
                + "data-differing=\"\(differing.count)\"><td>\(entry.screen)</td><td>\(group(entry.reports))</td>"
                + "<td>\(fixed(Double(entry.reports) * 100 / Double(max(total, 1)), 1)) %</td>"
                + "<td>\(differing.isEmpty ? "none" : differing.joined(separator: "<br>"))</td></tr>\n"
        }
        return out + "</tbody></table></section>\n"
    }
}
