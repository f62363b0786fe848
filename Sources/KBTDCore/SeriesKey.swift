import Foundation

/// The finest aggregation key: heights differ per model, OS major, language,
/// orientation and keyboard type, so counts are kept per exact key.
///
/// The key carries its fields' hash, computed when it is made (and again when a field
/// changes): a key is hashed many times on ingest (the batch's counts, the commit's merge,
/// the index's update, each keyed by structs that hold it), and hashing it is then one word,
/// not its three strings. `==` compares that hash first. The hash uses the process's
/// random seed, as `Hasher` does: it never leaves the process (`fingerprint` is the stable one).
public struct SeriesKey: Hashable, Sendable, Comparable {
    public var model: String { didSet { rehash() } }
    public var osMajor: Int { didSet { rehash() } }
    public var language: String { didSet { rehash() } }
    public var orientation: Orientation { didSet { rehash() } }
    public var keyboardType: String { didSet { rehash() } }
    /// The hash of the five fields (`rehash()`).
    private var fieldHash: Int

    public init(model: String, osMajor: Int, language: String, orientation: Orientation, keyboardType: String) {
        self.model = model
        self.osMajor = osMajor
        self.language = language
        self.orientation = orientation
        self.keyboardType = keyboardType
        fieldHash = Self.fieldHash(model, osMajor, language, orientation, keyboardType)
    }

    private static func fieldHash(_ model: String, _ osMajor: Int, _ language: String, _ orientation: Orientation,
                                  _ keyboardType: String) -> Int {
        var hasher = Hasher()
        hasher.combine(model)
        hasher.combine(osMajor)
        hasher.combine(language)
        hasher.combine(orientation)
        hasher.combine(keyboardType)
        return hasher.finalize()
    }

    private mutating func rehash() {
        fieldHash = Self.fieldHash(model, osMajor, language, orientation, keyboardType)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(fieldHash)
    }

    public static func == (a: SeriesKey, b: SeriesKey) -> Bool {
        a.fieldHash == b.fieldHash && a.osMajor == b.osMajor && a.orientation == b.orientation
            && a.model == b.model && a.language == b.language && a.keyboardType == b.keyboardType
    }

    public static func < (a: SeriesKey, b: SeriesKey) -> Bool {
        (a.model, a.osMajor, a.language, a.orientation.rawValue, a.keyboardType)
            < (b.model, b.osMajor, b.language, b.orientation.rawValue, b.keyboardType)
    }
}
