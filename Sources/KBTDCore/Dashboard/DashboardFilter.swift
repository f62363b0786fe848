/// The dashboard's URL filters: `?model=&os=&language=` (each optional).
public struct DashboardFilter: Sendable, Equatable {
    public var model: String?
    public var osMajor: Int?
    public var language: String?

    public init(model: String? = nil, osMajor: Int? = nil, language: String? = nil) {
        self.model = model
        self.osMajor = osMajor
        self.language = language
    }

    /// Parses the query parameters with the rules of ingest (`parameter` looks one up by name);
    /// an empty value means "all". A bad value is an error naming the field.
    public static func parse(_ parameter: (String) -> String?) throws(FieldError) -> DashboardFilter {
        var filter = DashboardFilter()
        if let model = parameter("model"), !model.isEmpty {
            if let problem = FieldRules.modelProblem(model) { throw FieldError(field: "model", reason: problem) }
            filter.model = model
        }
        if let os = parameter("os"), !os.isEmpty {
            guard let major = FieldRules.osMajor(os) else {
                throw FieldError(field: "os", reason: "must be an OS major version like 26 (or 26.1)")
            }
            filter.osMajor = major
        }
        if let language = parameter("language"), !language.isEmpty {
            if let problem = FieldRules.languageProblem(language) { throw FieldError(field: "language", reason: problem) }
            filter.language = language
        }
        return filter
    }

    func matches(_ key: SeriesKey) -> Bool {
        (model == nil || model == key.model) && (osMajor == nil || osMajor == key.osMajor)
            && (language == nil || language == key.language)
    }

    /// The query string that selects this filter (for links and the report's caption).
    public var description: String {
        var parts: [String] = []
        if let model { parts.append("model \(model)") }
        if let osMajor { parts.append("iOS \(osMajor)") }
        if let language { parts.append("language \(language)") }
        return parts.isEmpty ? "all data" : parts.joined(separator: ", ")
    }
}
