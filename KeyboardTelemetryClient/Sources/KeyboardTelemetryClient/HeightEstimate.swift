/// What `estimatedHeight` answers, and where the answer came from.
public struct KeyboardHeightEstimate: Sendable, Equatable {
    /// Where an estimate came from, best first.
    public enum Source: Sendable, Equatable {
        /// This device's own last measurement for the language, orientation and keyboard type.
        case measured
        /// kbtd's answer from `GET /v1/heights`; `basis` is its fallback level
        /// (`model+os+language`, `model+language`, `model+language-delta`, `model`, `screen+language`, `default`).
        case server(basis: String)
        /// No measurement and no server answer yet: the table shipped in the app (`kbtd export`).
        case bundled
        /// No measurement and no server answer yet: the configured default.
        case configuredDefault
    }

    /// The system keyboard's height in points, without any input accessory view
    /// (add yours), with the bottom safe area as the keyboard frame reports it.
    public var height: Double
    /// Which level of the chain answered.
    public var source: Source

    /// An estimate of `height` points from `source`.
    public init(height: Double, source: Source) {
        self.height = height
        self.source = source
    }
}
