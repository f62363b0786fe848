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

    /// What a `Set` or `Dictionary` hashes: the one word `fieldHash` mixed with the table's seed
    /// (`SeriesKey.mix`), not a `Hasher` built, fed and finalised.
    public func _rawHashValue(seed: Int) -> Int {
        Self.mix(fieldHash, seed: seed)
    }

    /// A table's hash of a key's word (`fieldHash`, or `word(_:_:_:)`): the word xor the table's
    /// seed through MurmurHash3's 64-bit finaliser (every output bit depends on every input bit).
    /// The word is already keyed by the process's random seed (`fieldHash` is SipHash of the
    /// strings under it), so a client cannot choose keys whose words collide; the finaliser only
    /// spreads it over the table's buckets, as `Hasher` would, in 8 instructions instead of about 60.
    @inline(__always)
    public static func mix(_ word: Int, seed: Int) -> Int {
        var x = UInt64(bitPattern: Int64(word ^ seed))
        x ^= x >> 33
        x &*= 0xFF51_AFD7_ED55_8CCD
        x ^= x >> 33
        x &*= 0xC4CE_B9FE_1A85_EC53
        x ^= x >> 33
        return Int(Int64(bitPattern: x))
    }

    /// One word for this key and up to three small fields of a count key that holds it
    /// (`HeightCountKey`, `SeriesBin`, ...): the fields folded into `fieldHash` one at a time,
    /// each step a bijection of the word for a given field (xor, then a multiply by an odd
    /// constant), so two keys of one series that differ in a field differ here. A count key hashes
    /// this one word (`hash(into:)`; `_rawHashValue(seed:)`: `mix` with the table's seed) instead
    /// of its `SeriesKey` and each field: a commit hashes every count's key
    /// when it adds up its batches and when it writes them. `fieldHash` is keyed by the process's
    /// random seed, so which fields collide here is not something a client can aim at; `==` still
    /// compares every field.
    @inline(__always)
    func word(_ a: Int, _ b: Int = 0, _ c: Int = 0) -> Int {
        var word = UInt64(bitPattern: Int64(fieldHash))
        word = (word ^ UInt64(bitPattern: Int64(a))) &* 0x9E37_79B9_7F4A_7C15
        word = ((word << 26 | word >> 38) ^ UInt64(bitPattern: Int64(b))) &* 0xBF58_476D_1CE4_E5B9
        word = ((word << 26 | word >> 38) ^ UInt64(bitPattern: Int64(c))) &* 0x94D0_49BB_1331_11EB
        return Int(Int64(bitPattern: word))
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
