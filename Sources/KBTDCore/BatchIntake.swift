/// A batch's JSON bytes to a `ValidatedBatch` in one pass: no `JSONValue`
/// tree, no dictionary per sample, no `String` per sample (language and
/// keyboard type are interned once per batch, numbers are read from the bytes).
///
/// Every decision and every message is the one `JSONParser` followed by
/// `BatchValidator` gives (the reference the fuzz harness and
/// `IntakeOracleTests` compare it with): a syntax error anywhere wins over any
/// validation fault, batch-level checks run in the validator's order whatever
/// the key order in the document, then each sample's checks in theirs.
///
///     let batch = try BatchIntake.validate(json: bytes, now: now, rules: BatchValidator(maxSamples: 10_000))
///     let delta = AggregateDelta(batch: batch)
public enum BatchIntake {
    /// Validates raw (inflated) JSON bytes with `rules`' limits; `now` is Unix seconds.
    public static func validate(json: [UInt8], now: Double, rules: BatchValidator) throws(FieldError) -> ValidatedBatch {
        let result = json.withUnsafeBufferPointer { buffer -> Result<ValidatedBatch, FieldError> in
            do throws(FieldError) {
                return .success(try validate(buffer: buffer, now: now, rules: rules))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Validates the bytes in `buffer` (see `validate(json:now:rules:)`).
    public static func validate(buffer: UnsafeBufferPointer<UInt8>, now: Double, rules: BatchValidator) throws(FieldError) -> ValidatedBatch {
        var scanner = IntakeScanner(bytes: buffer, rules: rules, now: now)
        defer { scanner.scratch?.deallocate() }
        do {
            try scanner.scanDocument()
        } catch {
            throw FieldError(field: "", reason: "body is not valid JSON: \(error)")
        }
        return try scanner.finish()
    }
}

/// The JSON type of a scanned value (for "must be a number, not string").
enum ScannedKind: UInt8 {
    case absent, null, bool, number, string, array, object

    var typeName: String {
        switch self {
        case .absent, .null: "null"
        case .bool: "boolean"
        case .number: "number"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    /// `JSONValue` with the same type (payloads that only matter for their type are empty).
    func placeholder() -> JSONValue? {
        switch self {
        case .absent: nil
        case .null: .null
        case .bool: .bool(false)
        case .number: .number(0)
        case .string: .string("")
        case .array: .array([])
        case .object: .object([:])
        }
    }
}

/// One member of a sample: its type and, by type, its value (a number, a
/// boolean, or for strings a code: an event or orientation, or an interned string's index).
struct SampleSlot {
    var kind: ScannedKind = .absent
    var number: Double = 0
    var flag = false
    var code = 0
}

/// The members of one sample object the validator reads, by field.
struct SampleFields {
    static let names = [
        "t", "event", "language", "orientation", "keyboard_type", "floating", "hardware_keyboard",
        "preloaded", "height", "accessory_height", "safe_area_bottom", "duration", "curve", "cold_start_ms",
    ]
    static let t = 0, event = 1, language = 2, orientation = 3, keyboardType = 4, floating = 5, hardware = 6
    static let preloaded = 7, height = 8, accessory = 9, safeArea = 10, duration = 11, curve = 12, coldStart = 13

    var slots = (SampleSlot(), SampleSlot(), SampleSlot(), SampleSlot(), SampleSlot(), SampleSlot(), SampleSlot(),
                 SampleSlot(), SampleSlot(), SampleSlot(), SampleSlot(), SampleSlot(), SampleSlot(), SampleSlot())

    subscript(field: Int) -> SampleSlot {
        get {
            switch field {
            case 0: slots.0
            case 1: slots.1
            case 2: slots.2
            case 3: slots.3
            case 4: slots.4
            case 5: slots.5
            case 6: slots.6
            case 7: slots.7
            case 8: slots.8
            case 9: slots.9
            case 10: slots.10
            case 11: slots.11
            case 12: slots.12
            default: slots.13
            }
        }
        set {
            switch field {
            case 0: slots.0 = newValue
            case 1: slots.1 = newValue
            case 2: slots.2 = newValue
            case 3: slots.3 = newValue
            case 4: slots.4 = newValue
            case 5: slots.5 = newValue
            case 6: slots.6 = newValue
            case 7: slots.7 = newValue
            case 8: slots.8 = newValue
            case 9: slots.9 = newValue
            case 10: slots.10 = newValue
            case 11: slots.11 = newValue
            case 12: slots.12 = newValue
            default: slots.13 = newValue
            }
        }
    }
}

/// A value `IntakeScanner.parseValue` read: strings are bytes valid until the next string is read.
enum ScannedValue {
    case null, bool(Bool), number(Double), string(UnsafeBufferPointer<UInt8>), array, object

    var kind: ScannedKind {
        switch self {
        case .null: .null
        case .bool: .bool
        case .number: .number
        case .string: .string
        case .array: .array
        case .object: .object
        }
    }
}

/// The single pass. Its syntax checks are `JSONParser`'s, step for step (same
/// order, same offsets); what the validator needs is recorded as it goes and
/// judged in `finish()`.
struct IntakeScanner {
    typealias ParseError = JSONParser.Error

    let bytes: UnsafeBufferPointer<UInt8>
    let rules: BatchValidator
    let now: Double
    let maxDepth = JSONParser.defaultMaxDepth
    var index = 0
    /// Unescaped string bytes (allocated at the first escape; freed by the caller).
    var scratch: UnsafeMutablePointer<UInt8>?

    // What the document held.
    var rootKind: ScannedKind = .absent
    var batchIDKind: ScannedKind = .absent
    var batchID: String?
    var deviceKind: ScannedKind = .absent
    var device: [String: JSONValue] = [:]
    var samplesKind: ScannedKind = .absent
    var entryCount = 0
    var samples: [Sample] = []
    var rejected: [SampleError] = []

    // Interned strings of this batch (language, keyboard type): bytes, string, validity.
    var internedBytes: [[UInt8]] = []
    var interned: [String] = []
    var languageValid: [Bool] = []
    var keyboardTypeValid: [Bool] = []
    /// The field of the key at each of a sample's first 16 positions in the
    /// last sample that had a key there (-1: another key), for `scanSample`'s guess.
    var keyOrder = [Int](repeating: -1, count: 16)

    init(bytes: UnsafeBufferPointer<UInt8>, rules: BatchValidator, now: Double) {
        self.bytes = bytes
        self.rules = rules
        self.now = now
    }

    private func error(_ reason: String) -> ParseError { ParseError(reason: reason, offset: index) }

    // MARK: The document

    mutating func scanDocument() throws(ParseError) {
        skipWhitespace()
        guard index < bytes.count else { throw error("unexpected end of input") }
        if bytes[index] == UInt8(ascii: "{") {
            try scanRoot(depth: 1)
            rootKind = .object
        } else {
            rootKind = try parseValue(depth: 0).kind
        }
        skipWhitespace()
        guard index == bytes.count else { throw error("unexpected data after the JSON document") }
    }

    /// The batch-level checks, in `BatchValidator.validate(document:now:)`'s order.
    mutating func finish() throws(FieldError) -> ValidatedBatch {
        guard rootKind == .object else {
            throw FieldError(field: "", reason: "body must be a JSON object, not \(rootKind.typeName)")
        }
        guard batchIDKind != .absent, batchIDKind != .null else {
            throw FieldError(field: "batch_id", reason: "is required")
        }
        guard let batchID else { throw FieldError(field: "batch_id", reason: "must be a UUID string") }
        let deviceValue: JSONValue? = deviceKind == .object ? .object(device) : deviceKind.placeholder()
        let device = try rules.validateDevice(deviceValue)
        guard samplesKind != .absent, samplesKind != .null else {
            throw FieldError(field: "samples", reason: "is required")
        }
        guard samplesKind == .array else {
            throw FieldError(field: "samples", reason: "must be an array, not \(samplesKind.typeName)")
        }
        guard (1...rules.maxSamples).contains(entryCount) else {
            throw FieldError(field: "samples", reason: "must hold 1 to \(rules.maxSamples) entries, got \(entryCount)")
        }
        return ValidatedBatch(batchID: batchID, device: device, samples: samples, rejected: rejected)
    }

    private static let rootKeys = ["batch_id", "device", "samples"]
    private static let deviceKeys = ["model", "os", "app", "app_version", "screen"]

    /// The top-level object (as `JSONParser.parseObject`), recording batch_id, device and samples.
    private mutating func scanRoot(depth: Int) throws(ParseError) {
        guard depth <= maxDepth else { throw error("nesting deeper than \(maxDepth) levels") }
        index += 1
        var seen: UInt8 = 0
        var others: Set<String> = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return
        }
        while true {
            let (field, name) = try readKey(Self.rootKeys)
            switch field {
            case 0:
                let value = try parseValue(depth: depth)
                batchIDKind = value.kind
                batchID = nil
                if case .string(let text) = value { batchID = Self.canonicalUUID(text) }
            case 1:
                if index < bytes.count, bytes[index] == UInt8(ascii: "{") {
                    try scanDevice(depth: depth + 1)
                    deviceKind = .object
                } else {
                    deviceKind = try parseValue(depth: depth).kind
                }
            case 2:
                if index < bytes.count, bytes[index] == UInt8(ascii: "[") {
                    try scanSamples(depth: depth + 1)
                    samplesKind = .array
                } else {
                    samplesKind = try parseValue(depth: depth).kind
                }
            default:
                _ = try parseValue(depth: depth)
            }
            try checkDuplicate(field, name, seen: &seen, others: &others)
            guard try endOfMember() else { return }
        }
    }

    /// `device` (as `JSONParser.parseObject`): its members the validator reads, as `JSONValue`s.
    private mutating func scanDevice(depth: Int) throws(ParseError) {
        guard depth <= maxDepth else { throw error("nesting deeper than \(maxDepth) levels") }
        index += 1
        device = [:]
        var seen: UInt8 = 0
        var others: Set<String> = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return
        }
        while true {
            let (field, name) = try readKey(Self.deviceKeys)
            let value = try parseValue(depth: depth)
            if field >= 0 {
                if case .string(let text) = value {
                    device[Self.deviceKeys[field]] = .string(String(decoding: text, as: UTF8.self))
                } else {
                    device[Self.deviceKeys[field]] = value.kind.placeholder()
                }
            }
            try checkDuplicate(field, name, seen: &seen, others: &others)
            guard try endOfMember() else { return }
        }
    }

    /// `samples` (as `JSONParser.parseArray`): each entry is validated as soon as it closes.
    private mutating func scanSamples(depth: Int) throws(ParseError) {
        guard depth <= maxDepth else { throw error("nesting deeper than \(maxDepth) levels") }
        index += 1
        entryCount = 0
        samples = []
        rejected = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return
        }
        samples.reserveCapacity(min(rules.maxSamples, bytes.count / 64 + 1))
        while true {
            skipWhitespace()
            let entry = entryCount
            entryCount += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "{") {
                let fields = try scanSample(depth: depth + 1)
                if entry < rules.maxSamples {
                    do {
                        samples.append(try validateSample(fields))
                    } catch {
                        rejected.append(SampleError(index: entry, error))
                    }
                }
            } else {
                let kind = try parseValue(depth: depth).kind
                if entry < rules.maxSamples {
                    rejected.append(SampleError(index: entry, field: "sample", reason: "must be an object, not \(kind.typeName)"))
                }
            }
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return
            } else {
                throw error("expected ',' or ']'")
            }
        }
    }

    /// One sample object (as `JSONParser.parseObject`), its members in slots.
    private mutating func scanSample(depth: Int) throws(ParseError) -> SampleFields {
        guard depth <= maxDepth else { throw error("nesting deeper than \(maxDepth) levels") }
        index += 1
        var fields = SampleFields()
        var seen: UInt16 = 0
        var others: Set<String> = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return fields
        }
        var position = 0
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a string key") }
            var field = -1
            var name: String?
            // Clients write every sample's members in the same order: when the
            // bytes here are exactly `"name"` of the field the previous sample
            // had at this position, the key is that field (what parseString and
            // sampleField would have found) without scanning it.
            if position < keyOrder.count, case let predicted = keyOrder[position], predicted >= 0,
               case let quoted = Self.quotedSampleKeys[predicted], index + quoted.utf8CodeUnitCount <= bytes.count,
               memoryEqual(quoted.utf8Start, bytes.baseAddress! + index, quoted.utf8CodeUnitCount) {
                field = predicted
                index += quoted.utf8CodeUnitCount
            } else {
                let key = try parseString()
                // Field names by bytes; any other key as a `String` (as the parser's dictionary compares keys).
                field = Self.sampleField(key)
                if field < 0 {
                    let text = String(decoding: key, as: UTF8.self)
                    field = SampleFields.names.firstIndex(where: { $0 == text }) ?? -1
                    name = text
                }
                if position < keyOrder.count { keyOrder[position] = field }
            }
            position += 1
            try expectColon()
            let value = try parseValue(depth: depth)
            if field >= 0 {
                fields[field] = slot(value, field: field)
                let bit = UInt16(1) << UInt16(field)
                guard seen & bit == 0 else { throw duplicate(name ?? SampleFields.names[field]) }
                seen |= bit
            } else if let name {
                guard others.insert(name).inserted else { throw duplicate(name) }
            }
            guard try endOfMember() else { return fields }
        }
    }

    /// What the validator needs of one sample member.
    private mutating func slot(_ value: ScannedValue, field: Int) -> SampleSlot {
        var slot = SampleSlot(kind: value.kind)
        switch value {
        case .number(let number): slot.number = number
        case .bool(let bool): slot.flag = bool
        case .string(let text):
            switch field {
            case SampleFields.event: slot.code = Self.code(text, Self.eventNames)
            case SampleFields.orientation: slot.code = Self.code(text, Self.orientationNames)
            case SampleFields.language, SampleFields.keyboardType: slot.code = intern(text)
            default: break
            }
        default: break
        }
        return slot
    }

    private static let eventNames: [StaticString] = ["show", "hide", "change"]
    private static let orientationNames: [StaticString] = ["portrait", "landscape"]

    /// The index of `text` in `names` (-1: none), by bytes for ASCII, else as `String` equality would.
    private static func code(_ text: UnsafeBufferPointer<UInt8>, _ names: [StaticString]) -> Int {
        if text.allSatisfy({ $0 < 0x80 }) {
            for (i, name) in names.enumerated() where name.utf8CodeUnitCount == text.count
                && memoryEqual(name.utf8Start, text.baseAddress, text.count) { return i }
            return -1
        }
        let string = String(decoding: text, as: UTF8.self)
        return names.firstIndex { $0.description == string } ?? -1
    }

    /// The index of `text` among this batch's interned strings, adding it when new.
    private mutating func intern(_ text: UnsafeBufferPointer<UInt8>) -> Int {
        for i in internedBytes.indices.reversed() where internedBytes[i].count == text.count {
            let equal = internedBytes[i].withUnsafeBufferPointer { memoryEqual($0.baseAddress, text.baseAddress, text.count) }
            if equal { return i }
        }
        let string = String(decoding: text, as: UTF8.self)
        internedBytes.append(Array(text))
        interned.append(string)
        languageValid.append(BatchValidator.languageProblem(string) == nil)
        keyboardTypeValid.append(KeyboardTypes.all.contains(string))
        return interned.count - 1
    }

    // MARK: One sample's checks (BatchValidator.validateSample, in its order)

    private func validateSample(_ fields: SampleFields) throws(FieldError) -> Sample {
        let t = try number(fields, SampleFields.t)
        guard t >= now - rules.maxAge else { throw FieldError(field: "t", reason: "is older than 30 days") }
        guard t <= now + rules.maxSkewAhead else { throw FieldError(field: "t", reason: "is more than 1 day in the future") }

        let eventCode = try string(fields, SampleFields.event)
        guard eventCode >= 0 else { throw FieldError(field: "event", reason: "must be show, hide or change") }
        let event: KeyboardEvent = eventCode == 0 ? .show : eventCode == 1 ? .hide : .change
        let languageID = try string(fields, SampleFields.language)
        if !languageValid[languageID], let problem = BatchValidator.languageProblem(interned[languageID]) {
            throw FieldError(field: "language", reason: problem)
        }
        let orientationCode = try string(fields, SampleFields.orientation)
        guard orientationCode >= 0 else { throw FieldError(field: "orientation", reason: "must be portrait or landscape") }
        let orientation: Orientation = orientationCode == 0 ? .portrait : .landscape
        let keyboardType: String
        if let typeID = try optionalString(fields, SampleFields.keyboardType) {
            keyboardType = keyboardTypeValid[typeID] ? interned[typeID] : try BatchValidator.keyboardType(interned[typeID])
        } else {
            keyboardType = "default"
        }
        let floating = try optionalBool(fields, SampleFields.floating) ?? false
        let hardware = try optionalBool(fields, SampleFields.hardware) ?? false
        let preloaded = try optionalBool(fields, SampleFields.preloaded) ?? false

        let height = try number(fields, SampleFields.height)
        guard (0...2000).contains(height) else { throw FieldError(field: "height", reason: "must be between 0 and 2000") }
        if event != .hide, !hardware, height <= 0 {
            throw FieldError(field: "height", reason: "must be greater than 0 for \(event.rawValue) events without a hardware keyboard")
        }
        let accessory = try optionalNumber(fields, SampleFields.accessory) ?? 0
        guard (0...height).contains(accessory) else {
            throw FieldError(field: "accessory_height", reason: "must be between 0 and height")
        }
        let safeArea = try optionalNumber(fields, SampleFields.safeArea) ?? 0
        guard (0...height).contains(safeArea) else {
            throw FieldError(field: "safe_area_bottom", reason: "must be between 0 and height")
        }
        let duration = try number(fields, SampleFields.duration)
        guard (0...5).contains(duration) else { throw FieldError(field: "duration", reason: "must be between 0 and 5 seconds") }
        let curveValue = try number(fields, SampleFields.curve)
        guard curveValue.rounded() == curveValue, (0...15).contains(curveValue) else {
            throw FieldError(field: "curve", reason: "must be an integer between 0 and 15")
        }
        let coldStart = try optionalNumber(fields, SampleFields.coldStart)
        if let coldStart {
            guard event == .show else { throw FieldError(field: "cold_start_ms", reason: "is only allowed on show events") }
            guard coldStart > 0, coldStart <= 60_000 else {
                throw FieldError(field: "cold_start_ms", reason: "must be greater than 0 and at most 60000")
            }
        }
        return Sample(
            t: t, event: event, language: interned[languageID], orientation: orientation, keyboardType: keyboardType,
            height: height, accessoryHeight: accessory, safeAreaBottom: safeArea, duration: duration,
            curve: Int(curveValue), coldStartMs: coldStart, preloaded: preloaded, floating: floating,
            hardwareKeyboard: hardware)
    }

    /// A member's slot when it holds `kind` (nil when absent or null); throws, naming the field, for another type.
    @inline(__always)
    private func present(_ fields: SampleFields, _ field: Int, _ kind: ScannedKind, _ expected: String) throws(FieldError) -> SampleSlot? {
        let slot = fields[field]
        guard slot.kind != .absent, slot.kind != .null else { return nil }
        guard slot.kind == kind else {
            throw FieldError(field: SampleFields.names[field], reason: "must be \(expected), not \(slot.kind.typeName)")
        }
        return slot
    }

    /// As `present`, for a member that must be there.
    @inline(__always)
    private func required(_ fields: SampleFields, _ field: Int, _ kind: ScannedKind, _ expected: String) throws(FieldError) -> SampleSlot {
        guard let slot = try present(fields, field, kind, expected) else {
            throw FieldError(field: SampleFields.names[field], reason: "is required")
        }
        return slot
    }

    private func number(_ fields: SampleFields, _ field: Int) throws(FieldError) -> Double {
        try required(fields, field, .number, "a number").number
    }

    private func optionalNumber(_ fields: SampleFields, _ field: Int) throws(FieldError) -> Double? {
        try present(fields, field, .number, "a number")?.number
    }

    /// A required string member's code.
    private func string(_ fields: SampleFields, _ field: Int) throws(FieldError) -> Int {
        try required(fields, field, .string, "a string").code
    }

    private func optionalString(_ fields: SampleFields, _ field: Int) throws(FieldError) -> Int? {
        try present(fields, field, .string, "a string")?.code
    }

    private func optionalBool(_ fields: SampleFields, _ field: Int) throws(FieldError) -> Bool? {
        try present(fields, field, .bool, "a boolean")?.flag
    }

    // MARK: Members

    /// Reads `"key"` and the colon after it: the key's index in `known` (-1:
    /// another key) and the key (compared as `String`s, as the parser's dictionary does).
    private mutating func readKey(_ known: [String]) throws(ParseError) -> (Int, String) {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a string key") }
        let key = try parseString()
        let text = String(decoding: key, as: UTF8.self)
        try expectColon()
        return (known.firstIndex(where: { $0 == text }) ?? -1, text)
    }

    private mutating func expectColon() throws(ParseError) {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
        index += 1
        skipWhitespace()
    }

    /// Throws `JSONParser`'s "duplicate key" error when `name` (field `field`, -1: another key) was seen before.
    private func checkDuplicate(_ field: Int, _ name: String, seen: inout UInt8, others: inout Set<String>) throws(ParseError) {
        if field < 0 {
            guard others.insert(name).inserted else { throw duplicate(name) }
        } else {
            let bit = UInt8(1) << UInt8(field)
            guard seen & bit == 0 else { throw duplicate(name) }
            seen |= bit
        }
    }

    private func duplicate(_ key: String) -> ParseError { error("duplicate key \"\(key.prefix(64))\"") }

    /// After a member: `,` (true: another follows) or `}` (false).
    private mutating func endOfMember() throws(ParseError) -> Bool {
        skipWhitespace()
        guard index < bytes.count else { throw error("unexpected end of input") }
        if bytes[index] == UInt8(ascii: ",") {
            index += 1
            return true
        } else if bytes[index] == UInt8(ascii: "}") {
            index += 1
            return false
        }
        throw error("expected ',' or '}'")
    }

    /// Each sample field's name in quotes, as it appears in a document when written plainly.
    private static let quotedSampleKeys: [StaticString] = [
        "\"t\"", "\"event\"", "\"language\"", "\"orientation\"", "\"keyboard_type\"", "\"floating\"",
        "\"hardware_keyboard\"", "\"preloaded\"", "\"height\"", "\"accessory_height\"", "\"safe_area_bottom\"",
        "\"duration\"", "\"curve\"", "\"cold_start_ms\"",
    ]

    /// The sample field a key names by its bytes (-1: not a plain-ASCII field name).
    @inline(__always)
    private static func sampleField(_ key: UnsafeBufferPointer<UInt8>) -> Int {
        guard let base = key.baseAddress else { return -1 }
        @inline(__always) func matches(_ name: StaticString) -> Bool { memoryEqual(name.utf8Start, base, key.count) }
        switch key.count {
        case 1: return base[0] == UInt8(ascii: "t") ? SampleFields.t : -1
        case 5: return matches("event") ? SampleFields.event : matches("curve") ? SampleFields.curve : -1
        case 6: return matches("height") ? SampleFields.height : -1
        case 8:
            return matches("language") ? SampleFields.language : matches("duration") ? SampleFields.duration
                : matches("floating") ? SampleFields.floating : -1
        case 9: return matches("preloaded") ? SampleFields.preloaded : -1
        case 11: return matches("orientation") ? SampleFields.orientation : -1
        case 13: return matches("keyboard_type") ? SampleFields.keyboardType : matches("cold_start_ms") ? SampleFields.coldStart : -1
        case 16: return matches("accessory_height") ? SampleFields.accessory : matches("safe_area_bottom") ? SampleFields.safeArea : -1
        case 17: return matches("hardware_keyboard") ? SampleFields.hardware : -1
        default: return -1
        }
    }

    /// `BatchValidator.canonicalUUID` over bytes.
    static func canonicalUUID(_ text: UnsafeBufferPointer<UInt8>) -> String? {
        guard text.count == 36 else { return nil }
        var lowered = [UInt8](repeating: 0, count: 36)
        for (i, byte) in text.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                guard byte == UInt8(ascii: "-") else { return nil }
                lowered[i] = byte
            } else {
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"): lowered[i] = byte
                case UInt8(ascii: "A")...UInt8(ascii: "F"): lowered[i] = byte + 0x20
                default: return nil
                }
            }
        }
        return String(decoding: lowered, as: UTF8.self)
    }

    // MARK: JSONParser's grammar, without the tree

    /// Inlined for the common case (no whitespace: the next byte is above 0x20).
    @inline(__always)
    private mutating func skipWhitespace() {
        guard index < bytes.count, bytes[index] <= 0x20 else { return }
        skipWhitespaceBytes()
    }

    private mutating func skipWhitespaceBytes() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// A value anywhere (as `JSONParser.parseValue`); arrays and objects are checked and skipped.
    private mutating func parseValue(depth: Int) throws(ParseError) -> ScannedValue {
        guard index < bytes.count else { throw error("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): try skipObject(depth: depth + 1); return .object
        case UInt8(ascii: "["): try skipArray(depth: depth + 1); return .array
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw error("unexpected character")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(ParseError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count, memoryEqual(literal.utf8Start, bytes.baseAddress! + index, count) else {
            throw error("invalid literal")
        }
        index += count
    }

    private mutating func skipObject(depth: Int) throws(ParseError) {
        guard depth <= maxDepth else { throw error("nesting deeper than \(maxDepth) levels") }
        index += 1
        var keys: Set<String> = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a string key") }
            let key = String(decoding: try parseString(), as: UTF8.self)
            try expectColon()
            _ = try parseValue(depth: depth)
            guard keys.insert(key).inserted else { throw duplicate(key) }
            guard try endOfMember() else { return }
        }
    }

    private mutating func skipArray(depth: Int) throws(ParseError) {
        guard depth <= maxDepth else { throw error("nesting deeper than \(maxDepth) levels") }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return
        }
        while true {
            skipWhitespace()
            _ = try parseValue(depth: depth)
            skipWhitespace()
            guard index < bytes.count else { throw error("unexpected end of input") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return
            } else {
                throw error("expected ',' or ']'")
            }
        }
    }

    /// A string's UTF-8 bytes (unescaped), valid until the next string is read.
    private mutating func parseString() throws(ParseError) -> UnsafeBufferPointer<UInt8> {
        index += 1  // opening quote
        let start = index
        let base = bytes.baseAddress!
        var bits: UInt64 = 0  // any byte >= 0x80 sets a byte's high bit
        // Eight bytes at a time (SWAR) up to the first quote, backslash or
        // control byte: `Self.special` marks them; the rest byte by byte.
        while index + 8 <= bytes.count {
            let word = UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
            let marks = Self.special(word)
            if marks != 0 {
                let before = marks.trailingZeroBitCount / 8  // plain bytes before the first special one
                bits |= word & ((1 << UInt64(before * 8)) &- 1)
                index += before
                break
            }
            bits |= word
            index += 8
        }
        while index < bytes.count {
            let byte = base[index]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(start: base + start, count: index - start)
                guard bits & 0x8080_8080_8080_8080 == 0 || String(validating: slice, as: UTF8.self) != nil else {
                    throw ParseError(reason: "invalid UTF-8 in string", offset: start)
                }
                index += 1
                return slice
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw error("control character in string") }
            bits |= UInt64(byte)
            index += 1
        }
        // Escapes: unescape into `scratch` (never longer than the escaped text).
        if scratch == nil { scratch = .allocate(capacity: max(bytes.count, 4)) }
        let out = scratch!
        var count = index - start
        if count > 0 { out.update(from: bytes.baseAddress! + start, count: count) }
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                let result = UnsafeBufferPointer(start: out, count: count)
                guard Self.isValidUTF8(result) else { throw ParseError(reason: "invalid UTF-8 in string", offset: start) }
                index += 1
                return result
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw error("unexpected end of input") }
                let escaped = bytes[index]
                index += 1
                switch escaped {
                case UInt8(ascii: "\""): out[count] = 0x22; count += 1
                case UInt8(ascii: "\\"): out[count] = 0x5C; count += 1
                case UInt8(ascii: "/"): out[count] = 0x2F; count += 1
                case UInt8(ascii: "b"): out[count] = 0x08; count += 1
                case UInt8(ascii: "f"): out[count] = 0x0C; count += 1
                case UInt8(ascii: "n"): out[count] = 0x0A; count += 1
                case UInt8(ascii: "r"): out[count] = 0x0D; count += 1
                case UInt8(ascii: "t"): out[count] = 0x09; count += 1
                case UInt8(ascii: "u"):
                    var scalar = try parseHex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                              bytes[index + 1] == UInt8(ascii: "u") else {
                            throw error("unpaired surrogate in \\u escape")
                        }
                        index += 2
                        let low = try parseHex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw error("unpaired surrogate in \\u escape") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw error("unpaired surrogate in \\u escape")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid \\u escape") }
                    for unit in UTF8.encode(unicode)! {
                        out[count] = unit
                        count += 1
                    }
                default:
                    throw error("invalid escape sequence")
                }
            default:
                if byte < 0x20 { throw error("control character in string") }
                out[count] = byte
                count += 1
                index += 1
            }
        }
        throw error("unterminated string")
    }

    private mutating func parseHex4() throws(ParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("invalid \\u escape") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error("invalid \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    /// A number literal (as `JSONParser.parseNumber`: same syntax checks,
    /// same value). The significant digits (up to 19) make a 64-bit integer w
    /// and the literal is w × 10^q; `DecimalConversion` rounds that correctly
    /// for q within ±64 (Clinger's exact fast path, else Eisel-Lemire). With
    /// more than 19 significant digits the value lies between w × 10^q and
    /// (w + 1) × 10^q: when both round to the same Double, that is the answer.
    /// Anything undecided goes through `Double(String)` itself.
    private mutating func parseNumber() throws(ParseError) -> Double {
        let start = index
        let base = bytes.baseAddress!
        let end = bytes.count
        @inline(__always) func digit(_ i: Int) -> UInt64? {
            let d = base[i] &- UInt8(ascii: "0")
            return d < 10 ? UInt64(d) : nil
        }
        var negative = false
        if base[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        guard index < end, digit(index) != nil else { throw error("invalid number") }
        var mantissa: UInt64 = 0
        var significant = 0  // digits from the first non-zero one
        var scale = 0  // the power of ten the digits in `mantissa` are short of
        if base[index] == UInt8(ascii: "0") {
            index += 1
            if index < end, digit(index) != nil { throw error("invalid number: leading zero") }
        } else {
            while index < end, let d = digit(index) {
                if significant < 19 { mantissa = mantissa &* 10 &+ d } else { scale += 1 }
                significant += 1
                index += 1
            }
        }
        if index < end, base[index] == UInt8(ascii: ".") {
            index += 1
            guard index < end, digit(index) != nil else { throw error("invalid number") }
            while index < end, let d = digit(index) {
                if significant < 19 {
                    mantissa = mantissa &* 10 &+ d
                    scale -= 1
                    if mantissa != 0 { significant += 1 }
                } else {
                    significant += 1
                }
                index += 1
            }
        }
        var exponent = 0
        var exponentDigits = 0
        if index < end, base[index] == UInt8(ascii: "e") || base[index] == UInt8(ascii: "E") {
            index += 1
            var exponentNegative = false
            if index < end, base[index] == UInt8(ascii: "+") || base[index] == UInt8(ascii: "-") {
                exponentNegative = base[index] == UInt8(ascii: "-")
                index += 1
            }
            guard index < end, digit(index) != nil else { throw error("invalid number") }
            while index < end, let d = digit(index) {
                if exponentDigits < 6 { exponent = exponent * 10 + Int(d) }
                exponentDigits += 1
                index += 1
            }
            if exponentNegative { exponent = -exponent }
        }
        guard index - start <= 64 else { throw ParseError(reason: "number literal too long", offset: start) }
        if exponentDigits <= 6 || mantissa == 0 {
            let q = exponent + scale
            if significant <= 19 {
                if let value = DecimalConversion.double(mantissa: mantissa, exponent: q, negative: negative) { return value }
            } else if let low = DecimalConversion.eiselLemire(mantissa, q, negative: negative),
                      let high = DecimalConversion.eiselLemire(mantissa + 1, q, negative: negative),
                      low.bitPattern == high.bitPattern {
                return low
            }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let value = Double(text), value.isFinite else {
            throw ParseError(reason: "number out of range", offset: start)
        }
        return value
    }

    /// One number literal, read as the scanner reads one in a document
    /// (`DecimalConversionTests` compares it with `Double(String)`).
    static func number(literal: [UInt8]) throws(ParseError) -> Double {
        let result = literal.withUnsafeBufferPointer { buffer -> Result<Double, ParseError> in
            var scanner = IntakeScanner(bytes: buffer, rules: BatchValidator(maxSamples: 1), now: 0)
            do throws(ParseError) {
                guard !buffer.isEmpty else { throw scanner.error("unexpected end of input") }
                let value = try scanner.parseNumber()
                guard scanner.index == buffer.count else { throw scanner.error("unexpected data after the JSON document") }
                return .success(value)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The high bit of each byte of `word` that is a quote, a backslash or
    /// below 0x20. Exact up to the first such byte (the lowest set bit); a
    /// borrow may mark bytes above it, which are never looked at.
    @inline(__always)
    private static func special(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        let quote = word ^ (ones &* 0x22), backslash = word ^ (ones &* 0x5C)
        let zeroQuote = (quote &- ones) & ~quote
        let zeroBackslash = (backslash &- ones) & ~backslash
        let control = (word &- ones &* 0x20) & ~word
        return (zeroQuote | zeroBackslash | control) & highs
    }

    /// What `String(validating:as: UTF8.self)` accepts (ASCII checked here, the rest by it).
    @inline(__always)
    private static func isValidUTF8(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        for byte in text where byte >= 0x80 { return String(validating: text, as: UTF8.self) != nil }
        return true
    }
}

@inline(__always)
private func memoryEqual(_ a: UnsafePointer<UInt8>?, _ b: UnsafePointer<UInt8>?, _ count: Int) -> Bool {
    guard count > 0 else { return true }
    guard let a, let b else { return false }
    @inline(__always) func word(_ p: UnsafePointer<UInt8>, _ i: Int) -> UInt64 { UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self) }
    @inline(__always) func half(_ p: UnsafePointer<UInt8>, _ i: Int) -> UInt32 { UnsafeRawPointer(p + i).loadUnaligned(as: UInt32.self) }
    if count < 4 {
        for i in 0..<count where a[i] != b[i] { return false }
        return true
    }
    if count <= 8 {  // two loads that overlap in the middle cover 4...8 bytes
        return half(a, 0) == half(b, 0) && half(a, count - 4) == half(b, count - 4)
    }
    var i = 0
    while i + 8 < count {  // eight bytes at a time, then the last eight (overlapping)
        guard word(a, i) == word(b, i) else { return false }
        i += 8
    }
    return word(a, count - 8) == word(b, count - 8)
}
