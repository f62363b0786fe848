import KBTDCore

/// When each key's height last changed, for the chosen model.
extension DashboardPage {
    static func changeSection(_ input: DashboardInput, _ summary: DashboardSummary) -> String {
        guard let model = summary.chosenModel else { return "" }
        let filter = input.filter
        let changes = input.changes(model).filter { change in
            (filter.osMajor.map { $0 == change.key.osMajor } ?? true) && (filter.language.map { $0 == change.key.language } ?? true)
        }
        var out = """
            <section id="changes" data-model="\(escape(model))"><h2>Height changes: \(escape(model))</h2>
            <p class="note">When the height each key's own votes elect (level 1, <code>model+os+language</code>, votes aged \
            as the estimator ages them) last changed, and from what. kbtd keeps no history of served answers: this is \
            recomputed from the key's votes per UTC day of receipt (<code>day_votes</code>) for the last \
            \(HeightIndex.dayVoteDaysKept) days of data, so a change before those days shows as none, and answers of a \
            point release that moved a keyboard are not dated (release counts carry no day). A key answers from \
            this height while it has a level's support; otherwise the fallback chain does.</p>

            """
        guard !changes.isEmpty else {
            return out + "<p class=\"empty\">No votes per day for this model's keys (none received since schema v10).</p></section>\n"
        }
        out += "<table class=\"changes\"><thead><tr><th>model</th><th>os</th><th>language</th><th>orientation</th><th>type</th>"
            + "<th>height now</th><th>last changed (UTC day)</th><th>from</th><th>days of data</th></tr></thead><tbody>\n"
        for change in changes {
            var attributes = "\(keyAttributes(change.key)) data-height=\"\(change.height)\""
            if let day = change.changedOnDay, let from = change.from {
                attributes += " data-changed-day=\"\(day)\" data-from=\"\(from)\""
            }
            let changed = change.changedOnDay.map { String(utc(Int64($0) * 86_400).prefix(10)) }
                ?? "no change since \(utc(Int64(change.firstDay) * 86_400).prefix(10))"
            out += "<tr class=\"change\" \(attributes)>\(keyCells(change.key))<td>\(fixed(change.height, 1)) pt</td>"
                + "<td>\(changed)</td><td>\(change.from.map { "\(fixed($0, 1)) pt" } ?? "")</td>"
                + "<td>\(change.lastDay - change.firstDay + 1)</td></tr>\n"
        }
        return out + "</tbody></table></section>\n"
    }
}
