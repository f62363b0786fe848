import KBTDCore
import KBTDStore
import Logging
import PostgresNIO

/// The dashboard's bounded read (`DashboardQueries`): the same aggregating
/// statements as on SQLite, from one read-only snapshot.
extension PostgresTelemetryStore {
    public func dashboardData(_ filter: DashboardFilter, minSamples: Int64) async throws -> DashboardData {
        try await snapshot { connection, logger in
            try await Self.dashboardData(DashboardQueries(.postgres, filter: filter), minSamples: minSamples,
                                         connection: connection, logger: logger)
        }
    }

    static func dashboardData(_ queries: DashboardQueries, minSamples: Int64, connection: PostgresConnection,
                              logger: Logger) async throws -> DashboardData {
        func rows(_ query: DashboardQueries.Query) async throws -> PostgresRowSequence {
            var binds = PostgresBindings()
            for value in query.values {
                switch value {
                case .text(let text): binds.append(text)
                case .int(let int): binds.append(int)
                }
            }
            return try await connection.query(PostgresQuery(unsafeSQL: query.sql, binds: binds), logger: logger)
        }
        let filter = queries.filter
        var data = DashboardData()

        var models: [String] = [], languages: [String] = [], osMajors: [Int] = []
        var distinct = 0
        for try await (model, _, n) in try await rows(queries.choices("model")).decode((String, Int, Int).self) {
            models.append(model)
            distinct = n
        }
        (data.models, data.hiddenModels) = (models.sorted(), distinct - models.count)
        distinct = 0
        for try await (os, _, n) in try await rows(queries.choices("os_major")).decode((Int, Int, Int).self) {
            osMajors.append(os)
            distinct = n
        }
        (data.osMajors, data.hiddenOSMajors) = (osMajors.sorted(), distinct - osMajors.count)
        distinct = 0
        for try await (language, _, n) in try await rows(queries.choices("language")).decode((String, Int, Int).self) {
            languages.append(language)
            distinct = n
        }
        (data.languages, data.hiddenLanguages) = (languages.sorted(), distinct - languages.count)

        for try await (keys, samples) in try await rows(queries.totals()).decode((Int, Int).self) {
            data.keys = keys
            data.samples = Int64(samples)
        }

        data.chosenModel = filter.model
        if data.chosenModel == nil {
            for try await model in try await rows(queries.busiestModel()).decode(String.self) { data.chosenModel = model }
        }
        if let model = data.chosenModel {
            var panels = 0
            for try await (language, orientation, total, n) in try await rows(queries.panels(model: model))
                .decode((String, String, Int, Int).self) {
                guard let orientation = Orientation(rawValue: orientation) else { continue }
                data.panels.append(DashboardData.Panel(language: language, orientation: orientation, bins: [], total: Int64(total)))
                panels = n
            }
            data.hiddenPanels = max(0, panels - data.panels.count)
            if !data.panels.isEmpty {
                var bins: [Int: [Int: Int64]] = [:]
                let position = Dictionary(uniqueKeysWithValues: data.panels.enumerated().map {
                    ("\($0.element.orientation.rawValue) \($0.element.language)", $0.offset)
                })
                for try await (language, orientation, bin, count) in try await rows(queries.bins(model: model, panels: data.panels))
                    .decode((String, String, Double, Int).self) {
                    guard let i = position["\(orientation) \(language)"] else { continue }
                    bins[i, default: [:]][HeightBin.halfPoints(bin), default: 0] += Int64(count)
                }
                for i in data.panels.indices {
                    data.panels[i].bins = (bins[i] ?? [:]).sorted { $0.key < $1.key }
                        .map { DashboardData.Bin(halfPoints: $0.key, count: $0.value) }
                }
            }
        }

        for try await (preloaded, bucket, count) in try await rows(queries.coldBuckets()).decode((Int, Int, Int).self) {
            if preloaded != 0 {
                data.warmBuckets[bucket, default: 0] += Int64(count)
            } else {
                data.coldBuckets[bucket, default: 0] += Int64(count)
            }
        }
        var coldKeys: [SeriesKey] = []
        for try await (m, o, l, r, k, _, _) in try await rows(queries.coldStartKeys())
            .decode((String, Int, String, String, String, Int, Int).self) {
            if let key = series(m, o, l, r, k) { coldKeys.append(key) }
        }
        for key in coldKeys {
            var row = DashboardData.ColdStartRow(key: key, cold: CountHistogram(), warm: CountHistogram())
            for try await (preloaded, bucket, count) in try await rows(queries.coldStarts(of: key)).decode((Int, Int, Int).self) {
                if preloaded != 0 { row.warm.add(bucket, Int64(count)) } else { row.cold.add(bucket, Int64(count)) }
            }
            data.coldStartRows.append(row)
        }

        for try await (ms, count) in try await rows(queries.animation("duration_ms")).decode((Int, Int).self) {
            data.durations.append(DashboardData.ValueCount(value: ms, count: Int64(count)))
        }
        for try await (curve, count) in try await rows(queries.animation("curve")).decode((Int, Int).self) {
            data.curves.append(DashboardData.ValueCount(value: curve, count: Int64(count)))
        }

        for try await (m, o, l, r, k, docked) in try await rows(queries.thinKeys(minSamples: minSamples))
            .decode((String, Int, String, String, String, Int).self) {
            if let key = series(m, o, l, r, k) { data.thinKeys.append(DashboardData.KeyCount(key: key, count: Int64(docked))) }
        }
        return data
    }
}
