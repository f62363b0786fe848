/// Key of the `model+language` level: any OS.
public struct ModelLanguageKey: Hashable, Sendable, Comparable {
    public var model: String
    public var language: String
    public var orientation: Orientation
    public var keyboardType: String

    public init(model: String, language: String, orientation: Orientation, keyboardType: String) {
        self.model = model
        self.language = language
        self.orientation = orientation
        self.keyboardType = keyboardType
    }

    public static func < (a: Self, b: Self) -> Bool {
        (a.model, a.language, a.orientation.rawValue, a.keyboardType) < (b.model, b.language, b.orientation.rawValue, b.keyboardType)
    }
}

/// Key of the `model` level: any OS, any language.
public struct ModelKey: Hashable, Sendable {
    public var model: String
    public var orientation: Orientation
    public var keyboardType: String
}

/// Key used to find the other models that measured a language.
public struct LanguageKey: Hashable, Sendable {
    public var language: String
    public var orientation: Orientation
    public var keyboardType: String
}
