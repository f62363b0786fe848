import CSQLite
import KBTDCore

/// The dashboard's bounded read (`DashboardQueries`): a dozen aggregating
/// statements in one read transaction, each returning at most what the page draws.
extension SQLiteTelemetryStore {
    public func dashboardData(_ filter: DashboardFilter, minSamples: Int64) throws -> DashboardData {
        let queries = DashboardQueries(.sqlite, filter: filter)
        func each(_ query: DashboardQueries.Query, _ body: (SQLiteRow) -> Void) throws {
            let values = query.values.map { value -> SQLiteValue in
                switch value {
                case .text(let text): .text(text)
                case .int(let int): .int(int)
                }
            }
            try statement(query.sql).forEachRow(values, body)
        }
        func key(_ row: SQLiteRow, from column: Int32) -> SeriesKey? {
            guard let orientation = Orientation(rawValue: row.text(column + 3)) else { return nil }
            return SeriesKey(model: row.text(column), osMajor: Int(row.int(column + 1)), language: row.text(column + 2),
                             orientation: orientation, keyboardType: row.text(column + 4))
        }

        // One read transaction: every statement sees the same snapshot.
        return try db.inTransaction {
            var data = DashboardData()
            var distinct = 0
            var models: [String] = [], languages: [String] = [], osMajors: [Int] = []
            try each(queries.choices("model")) { models.append($0.text(0)); distinct = Int($0.int(2)) }
            (data.models, data.hiddenModels) = (models.sorted(), distinct - models.count)
            distinct = 0
            try each(queries.choices("os_major")) { osMajors.append(Int($0.int(0))); distinct = Int($0.int(2)) }
            (data.osMajors, data.hiddenOSMajors) = (osMajors.sorted(), distinct - osMajors.count)
            distinct = 0
            try each(queries.choices("language")) { languages.append($0.text(0)); distinct = Int($0.int(2)) }
            (data.languages, data.hiddenLanguages) = (languages.sorted(), distinct - languages.count)

            try each(queries.totals()) { row in
                data.keys = Int(row.int(0))
                data.samples = row.int(1)
            }

            data.chosenModel = filter.model
            if data.chosenModel == nil { try each(queries.busiestModel()) { data.chosenModel = $0.text(0) } }
            if let model = data.chosenModel {
                var panels = 0
                try each(queries.panels(model: model)) { row in
                    guard let orientation = Orientation(rawValue: row.text(1)) else { return }
                    data.panels.append(DashboardData.Panel(language: row.text(0), orientation: orientation, bins: [], total: row.int(2)))
                    panels = Int(row.int(3))
                }
                data.hiddenPanels = max(0, panels - data.panels.count)
                if !data.panels.isEmpty {
                    var bins: [Int: [Int: Int64]] = [:]
                    let position = Dictionary(uniqueKeysWithValues: data.panels.enumerated().map {
                        ("\($0.element.orientation.rawValue) \($0.element.language)", $0.offset)
                    })
                    try each(queries.bins(model: model, panels: data.panels)) { row in
                        guard let i = position["\(row.text(1)) \(row.text(0))"] else { return }
                        bins[i, default: [:]][HeightBin.halfPoints(row.double(2)), default: 0] += row.int(3)
                    }
                    for i in data.panels.indices {
                        data.panels[i].bins = (bins[i] ?? [:]).sorted { $0.key < $1.key }.map { DashboardData.Bin(halfPoints: $0.key, count: $0.value) }
                    }
                }
            }

            try each(queries.coldBuckets()) { row in
                if row.int(0) != 0 {
                    data.warmBuckets[Int(row.int(1)), default: 0] += row.int(2)
                } else {
                    data.coldBuckets[Int(row.int(1)), default: 0] += row.int(2)
                }
            }
            var coldKeys: [SeriesKey] = []
            try each(queries.coldStartKeys()) { row in
                if let key = key(row, from: 0) { coldKeys.append(key) }
            }
            for coldKey in coldKeys {
                var row = DashboardData.ColdStartRow(key: coldKey, cold: CountHistogram(), warm: CountHistogram())
                try each(queries.coldStarts(of: coldKey)) { counts in
                    if counts.int(0) != 0 { row.warm.add(Int(counts.int(1)), counts.int(2)) } else { row.cold.add(Int(counts.int(1)), counts.int(2)) }
                }
                data.coldStartRows.append(row)
            }

            try each(queries.animation("duration_ms")) { data.durations.append(DashboardData.ValueCount(value: Int($0.int(0)), count: $0.int(1))) }
            try each(queries.animation("curve")) { data.curves.append(DashboardData.ValueCount(value: Int($0.int(0)), count: $0.int(1))) }

            try each(queries.thinKeys(minSamples: minSamples)) { row in
                if let key = key(row, from: 0) { data.thinKeys.append(DashboardData.KeyCount(key: key, count: row.int(5))) }
            }
            return data
        }
    }
}
