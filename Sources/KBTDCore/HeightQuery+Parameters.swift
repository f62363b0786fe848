extension HeightQuery {
    /// Parses and checks a height question with the rules of ingest:
    /// `GET /v1/height`'s query parameters and `kbtd height`'s flags (both
    /// named `model`, `language`, `os`, `orientation`, `keyboard_type`,
    /// `screen`; `parameter` looks one up by name).
    ///
    ///     let query = try HeightQuery(parameters: { request.query[$0] })
    public init(parameters parameter: (String) -> String?) throws(FieldError) {
        let model = try Self.model(parameter("model"))
        guard let language = parameter("language"), !language.isEmpty else {
            throw FieldError(field: "language", reason: "is required")
        }
        if let problem = FieldRules.languageProblem(language) { throw FieldError(field: "language", reason: problem) }
        var osMajor: Int?
        var osMinor: Int?
        if let os = parameter("os") {
            osMajor = try Self.osMajor(os)
            osMinor = FieldRules.osMinor(os)
        }
        var orientation = Orientation.portrait
        if let text = parameter("orientation") { orientation = try FieldRules.orientation(text) }
        let keyboardType = try FieldRules.keyboardType(parameter("keyboard_type") ?? "default")
        var screen: ScreenSize?
        if let text = parameter("screen") { screen = try Self.screen(text) }
        self.init(model: model, language: language, osMajor: osMajor, osMinor: osMinor, orientation: orientation,
                  keyboardType: keyboardType, screen: screen)
    }

    /// A required `model` parameter, a machine identifier like `iPhone17,1`.
    public static func model(_ text: String?) throws(FieldError) -> String {
        guard let text, !text.isEmpty else { throw FieldError(field: "model", reason: "is required") }
        if let problem = FieldRules.modelProblem(text) { throw FieldError(field: "model", reason: problem) }
        return text
    }

    /// An `os` parameter: a dotted version, of which the major counts.
    public static func osMajor(_ text: String) throws(FieldError) -> Int {
        guard let major = FieldRules.osMajor(text) else { throw FieldError(field: "os", reason: "must be a dotted version like 26.1") }
        return major
    }

    /// A `screen` parameter, `WIDTHxHEIGHT` in points.
    public static func screen(_ text: String) throws(FieldError) -> ScreenSize {
        if let problem = ScreenSize.problem(text) { throw FieldError(field: "screen", reason: problem) }
        guard let screen = ScreenSize(text) else { throw FieldError(field: "screen", reason: "is not a screen size") }
        return screen
    }
}
