import Foundation

/// The finest aggregation key: heights differ per model, OS major, language,
/// orientation and keyboard type, so counts are kept per exact key.
public struct SeriesKey: Hashable, Sendable, Comparable {
    public var model: String
    public var osMajor: Int
    public var language: String
    public var orientation: Orientation
    public var keyboardType: String

    public init(model: String, osMajor: Int, language: String, orientation: Orientation, keyboardType: String) {
        self.model = model
        self.osMajor = osMajor
        self.language = language
        self.orientation = orientation
        self.keyboardType = keyboardType
    }

    public static func < (a: SeriesKey, b: SeriesKey) -> Bool {
        (a.model, a.osMajor, a.language, a.orientation.rawValue, a.keyboardType)
            < (b.model, b.osMajor, b.language, b.orientation.rawValue, b.keyboardType)
    }
}
