/// The rules of a batch's fields (docs/http-api.md) in one place: the limits
/// a batch is held to, the checks on one value (a model, an OS version, a
/// language, a sample's height...) and their messages. `BatchIntake` applies
/// them as it scans; the height questions, the dashboard filter, the command
/// line and the operations routes check their parameters with the same
/// functions, and the reference validator (the fuzz oracle) calls them too.
///
///     let rules = FieldRules(maxSamples: 10_000)
///     guard let major = FieldRules.osMajor("26.1") else { ... }
public struct FieldRules: Sendable {
    /// Most samples one batch may carry.
    public var maxSamples: Int
    /// Samples older than this many seconds before `now` are rejected.
    public var maxAge: Double = 30 * 86_400
    /// Samples more than this many seconds after `now` are rejected.
    public var maxSkewAhead: Double = 86_400

    public init(maxSamples: Int = 10_000) {
        self.maxSamples = maxSamples
    }

    // MARK: The batch

    /// `samples` holds `count` entries: 1 to `maxSamples`.
    public func checkSampleCount(_ count: Int) throws(FieldError) {
        guard (1...maxSamples).contains(count) else {
            throw FieldError(field: "samples", reason: "must hold 1 to \(maxSamples) entries, got \(count)")
        }
    }

    /// The lower-cased 8-4-4-4-12 form of a UUID string (`batch_id`), or nil.
    public static func canonicalUUID(_ string: String) -> String? {
        let bytes = Array(string.utf8)
        guard bytes.count == 36 else { return nil }
        for (i, byte) in bytes.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                guard byte == UInt8(ascii: "-") else { return nil }
            } else {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                    || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
                    || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte) else { return nil }
            }
        }
        return string.lowercased()
    }

    // MARK: Values shared by batches and questions

    /// `portrait` or `landscape` (field `orientation`, in a sample and in a height question).
    public static func orientation(_ text: String) throws(FieldError) -> Orientation {
        guard let orientation = Orientation(rawValue: text) else { throw unknownOrientation }
        return orientation
    }

    static let unknownOrientation = FieldError(field: "orientation", reason: "must be portrait or landscape")

    /// One of the UIKeyboardType names (field `keyboard_type`).
    public static func keyboardType(_ text: String) throws(FieldError) -> String {
        guard KeyboardTypes.all.contains(text) else {
            throw FieldError(field: "keyboard_type", reason: "must be a UIKeyboardType name such as default or numberPad")
        }
        return text
    }

    /// Why `model` is not a machine identifier, or nil (shared by ingest and the height queries).
    public static func modelProblem(_ model: String) -> String? {
        (1...32).contains(model.utf8.count) && model.utf8.allSatisfy(isModelByte)
            ? nil : "must be 1-32 characters of [A-Za-z0-9,._-]"
    }

    /// Why `language` is not a keyboard language tag, or nil.
    public static func languageProblem(_ language: String) -> String? {
        (1...35).contains(language.utf8.count) && language.utf8.allSatisfy(isLanguageByte)
            ? nil : "must be 1-35 characters of [A-Za-z0-9_-]"
    }

    static func isModelByte(_ byte: UInt8) -> Bool {
        isAlphanumeric(byte) || byte == UInt8(ascii: ",") || byte == UInt8(ascii: ".")
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
    }

    static func isLanguageByte(_ byte: UInt8) -> Bool {
        isAlphanumeric(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
    }

    static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    /// The major version of a dotted OS version (`26` for `26.1`), or nil when
    /// the string is not 1-3 dot-separated runs of at most 4 digits.
    public static func osMajor(_ os: String) -> Int? {
        let parts = os.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count),
              parts.allSatisfy({ (1...4).contains($0.utf8.count) && $0.utf8.allSatisfy { (0x30...0x39).contains($0) } })
        else { return nil }
        return Int(parts[0])
    }
}
