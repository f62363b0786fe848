/// A JSON value to write, with object keys in the order given, so equal
/// answers serialise to equal bytes (ETags depend on it).
public indirect enum JSONOutput: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONOutput])
    case object([(String, JSONOutput)])

    public static func == (a: JSONOutput, b: JSONOutput) -> Bool { a.serialized() == b.serialized() }

    /// An optional double, `null` when absent.
    public static func double(_ value: Double?) -> JSONOutput { value.map { .double($0) } ?? .null }

    public func serialized() -> String {
        var out = ""
        write(to: &out)
        return out
    }

    public func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .int(let value): out += String(value)
        case .double(let value): out += value.isFinite ? "\(value)" : "null"
        case .string(let value): Self.writeString(value, to: &out)
        case .array(let values):
            out += "["
            for (i, value) in values.enumerated() {
                if i > 0 { out += "," }
                value.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out += "," }
                Self.writeString(key, to: &out)
                out += ":"
                value.write(to: &out)
            }
            out += "}"
        }
    }

    static func writeString(_ string: String, to out: inout String) {
        out += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

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
    /// The body of `GET /v1/heights`: every (language, orientation, type) the
    /// model has data for, each answered through the chain, plus what to use
    /// for a language kbtd has not seen on this model, per orientation. With
    /// `screen`, languages measured on other models of that screen are answered too.
    public func allEstimates(model: String, os: String?, screen: ScreenSize? = nil, in index: HeightIndex) -> JSONOutput {
        let osMajor = os.flatMap(BatchValidator.osMajor)
        let own = index.keysByModel[model] ?? []
        // With `screen`, also what models of that screen measured: a model nobody has measured
        // yet gets its per-language answers from the screen level.
        var keys = own
        if let screen {
            for other in index.models(withScreen: screen) where other != model {
                for key in index.languages(ofModel: other) {
                    keys.insert(ModelLanguageKey(model: model, language: key.language, orientation: key.orientation,
                                                 keyboardType: key.keyboardType))
                }
            }
        }
        let estimates: [JSONOutput] = keys.sorted().compactMap { key in
            let estimate = self.estimate(
                HeightQuery(model: model, language: key.language, osMajor: osMajor,
                            orientation: key.orientation, keyboardType: key.keyboardType, screen: screen), in: index)
            if estimate.basis == .default && !own.contains(key) { return nil }
            guard case .object(let members) = estimate.json else { return .null }
            return .object([("language", .string(key.language)), ("orientation", .string(key.orientation.rawValue)),
                            ("keyboard_type", .string(key.keyboardType))] + members)
        }
        let defaults: [(String, JSONOutput)] = Orientation.allCases.map { orientation in
            let modelStats = index.byModel[ModelKey(model: model, orientation: orientation, keyboardType: "default")]
            let fallback: HeightEstimate
            if let stats = modelStats, supports(stats) {
                fallback = estimate(HeightQuery(model: model, language: "", osMajor: nil, orientation: orientation), in: index)
            } else {
                fallback = defaultEstimate(orientation, modelStats: modelStats)
            }
            return (orientation.rawValue, fallback.json)
        }
        return .object([
            ("model", .string(model)),
            ("os", os.map { .string($0) } ?? .null),
            ("estimates", .array(estimates)),
            ("default", .object(defaults)),
        ])
    }
}
