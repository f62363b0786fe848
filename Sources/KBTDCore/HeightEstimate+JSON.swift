/// The JSON bodies of `GET /v1/height` (`HeightEstimate.json`) and `GET /v1/heights`
/// (`HeightEstimator.allEstimates`), which `kbtd height` and `kbtd export` print too.
extension HeightEstimate {
    /// The body of `GET /v1/height`, and what `kbtd height` prints.
    public var json: JSONOutput {
        .object([
            ("height", .double(height)),
            ("safe_area_bottom", .double(safeAreaBottom)),
            ("basis", .string(basis.rawValue)),
            ("samples", .int(samples)),
            ("p10", .double(p10)),
            ("p90", .double(p90)),
            ("animation", .object([("duration", .double(animationDuration)), ("curve", .int(Int64(animationCurve)))])),
        ])
    }
}

extension HeightEstimator {
    /// Most entries `GET /v1/heights` lists (the key caps keep a real model far below it).
    public static let maxListedEstimates = 2_000

    /// The body of `GET /v1/heights`: every (language, orientation, type) this
    /// model answers from its own data (levels `model+os+language` and
    /// `model+language`), plus what to use for anything else, per orientation.
    /// Keys the model has too little data for are left out rather than sent
    /// down the chain: that keeps the cost linear in the model's own keys.
    /// With `screen`, a model nobody has measured yet gets the languages that
    /// models of that screen measured, answered by the `screen+language` level.
    /// With `osMinor`, each key is answered for that release, as `GET /v1/height` answers it
    /// (a release that moved a keyboard is its own truth, docs/fallback-chain.md "Point releases").
    /// `cold_start`, where supported: the model's first-show latency without and with pre-warming
    /// (`coldStart`).
    public func allEstimates(model: String, osMajor: Int?, osMinor: Int? = nil, screen: ScreenSize? = nil,
                             in index: some HeightLevels) -> JSONOutput {
        let own = index.languages(ofModel: model)
        var estimates: [JSONOutput] = []
        var truncated = false
        func list(_ key: ModelLanguageKey, _ estimate: HeightEstimate) -> Bool {
            guard estimates.count < Self.maxListedEstimates else {
                truncated = true
                return false
            }
            guard case .object(let members) = estimate.json else { return true }
            estimates.append(.object([("language", .string(key.language)), ("orientation", .string(key.orientation.rawValue)),
                                      ("keyboard_type", .string(key.keyboardType))] + members))
            return true
        }
        if !own.isEmpty {
            for key in own.sorted() {
                guard let estimate = ownEstimate(
                    HeightQuery(model: model, language: key.language, osMajor: osMajor, osMinor: osMinor,
                                orientation: key.orientation, keyboardType: key.keyboardType, screen: screen),
                    in: index) else { continue }
                if !list(key, estimate) { break }
            }
        } else if let screen {
            var keys: Set<ModelLanguageKey> = []
            for other in index.models(withScreen: screen) where other != model {
                for key in index.languages(ofModel: other) where keys.count <= Self.maxListedEstimates {
                    keys.insert(ModelLanguageKey(model: model, language: key.language, orientation: key.orientation,
                                                 keyboardType: key.keyboardType))
                }
            }
            for key in keys.sorted() {
                let estimate = self.estimate(
                    HeightQuery(model: model, language: key.language, osMajor: osMajor, osMinor: osMinor,
                                orientation: key.orientation, keyboardType: key.keyboardType, screen: screen), in: index)
                guard estimate.basis != .default else { continue }
                if !list(key, estimate) { break }
            }
        }
        let defaults: [(String, JSONOutput)] = Orientation.allCases.map { orientation in
            let modelStats = index.model(ModelKey(model: model, orientation: orientation, keyboardType: "default"))
            let fallback: HeightEstimate
            if let stats = modelStats, supports(stats) {
                fallback = estimate(HeightQuery(model: model, language: "", osMajor: nil, orientation: orientation), in: index)
            } else {
                fallback = defaultEstimate(orientation, modelStats: modelStats)
            }
            return (orientation.rawValue, fallback.json)
        }
        var members: [(String, JSONOutput)] = [
            ("model", .string(model)),
            ("os", .null),
            ("estimates", .array(estimates)),
            ("default", .object(defaults)),
        ]
        if let coldStart = coldStart(model: model, osMajor: osMajor, in: index) { members.append(("cold_start", coldStart)) }
        if truncated { members.append(("truncated", .bool(true))) }
        return .object(members)
    }
}
