import Foundation
import KBTDCore

/// The filter form (live) or the filter caption (a written report).
extension DashboardPage {
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
}
