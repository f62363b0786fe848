/// Batches and samples stored in one UTC hour (the store's `hourly_ingest` table).
public struct HourlyIngest: Sendable, Equatable {
    /// Unix seconds of the hour's start.
    public var hour: Int64
    public var batches: Int64
    public var samples: Int64
    public var rejected: Int64

    public init(hour: Int64, batches: Int64, samples: Int64, rejected: Int64) {
        self.hour = hour
        self.batches = batches
        self.samples = samples
        self.rejected = rejected
    }
}

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

/// Served height answers per basis, counted by a running daemon since it started.
public struct BasisCounts: Sendable, Equatable {
    /// `GET /v1/height` answers (200 and 304).
    public var counts: [EstimateBasis: Int64]
    /// Estimates inside `GET /v1/heights` answers (what the client library fetches), one per entry.
    public var modelEstimates: [EstimateBasis: Int64]
    /// Unix seconds of the daemon's start.
    public var since: Int64

    public init(counts: [EstimateBasis: Int64], modelEstimates: [EstimateBasis: Int64] = [:], since: Int64) {
        self.counts = counts
        self.modelEstimates = modelEstimates
        self.since = since
    }
}
