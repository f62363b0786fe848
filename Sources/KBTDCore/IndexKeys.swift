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

    public init(model: String, orientation: Orientation, keyboardType: String) {
        self.model = model
        self.orientation = orientation
        self.keyboardType = keyboardType
    }
}

/// Key used to find the other models that measured a language.
public struct LanguageKey: Hashable, Sendable {
    public var language: String
    public var orientation: Orientation
    public var keyboardType: String
}

/// Every model, language and keyboard-type string the index holds, once each,
/// numbered; and the OS majors, numbered the same way. Keys of the index are
/// made of these numbers, so a million keys do not hold a million copies of
/// "iPhone17,1". The stores' `IndexedKeys` holds its keys' strings the same way.
public struct IndexStrings: Sendable {
    private var ids: [String: UInt32] = [:]
    private var strings: [String] = []
    private var osIDs: [Int: UInt32] = [:]
    private var osMajors: [Int] = []

    public init() {}

    /// The number of `string`, adding it when new.
    public mutating func intern(_ string: String) -> UInt32 {
        if let id = ids[string] { return id }
        let id = UInt32(strings.count)
        strings.append(string)
        ids[string] = id
        return id
    }

    mutating func intern(os: Int) -> UInt32 {
        if let id = osIDs[os] { return id }
        let id = UInt32(osMajors.count)
        osMajors.append(os)
        osIDs[os] = id
        return id
    }

    /// The number of `string`, or nil when the index has never seen it.
    func id(_ string: String) -> UInt32? { ids[string] }
    func id(os: Int) -> UInt32? { osIDs[os] }

    public subscript(id: UInt32) -> String { strings[Int(id)] }
    subscript(os id: UInt32) -> Int { osMajors[Int(id)] }
    /// OS majors interned (ids are 0..<osCount).
    var osCount: Int { osMajors.count }
}

/// A `model+language` key (or, with `anyLanguage`, a `model` key) as numbers.
struct PackedLevelKey: Hashable, Sendable {
    var model: UInt32
    var language: UInt32
    /// Keyboard type number and orientation (`kind(orientation:keyboardType:)`).
    var kind: UInt32

    static let anyLanguage = UInt32.max

    static func kind(orientation: Orientation, keyboardType: UInt32) -> UInt32 {
        keyboardType << 1 | (orientation == .portrait ? 0 : 1)
    }

    static func orientation(of kind: UInt32) -> Orientation { kind & 1 == 0 ? .portrait : .landscape }
    static func keyboardType(of kind: UInt32) -> UInt32 { kind >> 1 }
}

/// A `SeriesKey` as numbers: 16 bytes.
struct PackedSeriesKey: Hashable, Sendable {
    var model: UInt32
    var language: UInt32
    var kind: UInt32
    var os: UInt32
}
