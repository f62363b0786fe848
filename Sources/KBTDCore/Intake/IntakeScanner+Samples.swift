extension IntakeScanner {
    /// Records what the validator needs of one sample member in `fields`.
    @inline(__always)
    mutating func record(_ value: ScannedValue, field: Int, in fields: inout SampleFields) {
        switch value {
        case .number(let number): fields.set(field, .number, bits: number.bitPattern)
        case .bool(let bool): fields.set(field, .bool, bits: bool ? 1 : 0)
        case .string(let text):
            let code: Int = switch field {
            case SampleFields.event: Self.eventCode(text)
            case SampleFields.orientation: Self.orientationCode(text)
            case SampleFields.language, SampleFields.keyboardType: intern(text)
            default: 0
            }
            fields.set(field, .string, bits: UInt64(bitPattern: Int64(code)))
        default: fields.set(field, value.kind, bits: 0)
        }
    }

    /// A field's value (the key and colon read): numbers and strings read as
    /// the field wants them, anything else through `parseValue` and `record`.
    @inline(__always)
    mutating func scanFieldValue(_ field: Int, in fields: inout SampleFields, depth: Int) throws(ParseError) {
        guard index < bytes.count else { throw error("unexpected end of input") }
        let byte = bytes[index]
        if byte &- UInt8(ascii: "0") < 10 || byte == UInt8(ascii: "-") {
            fields.set(field, .number, bits: try parseNumberFast().bitPattern)
        } else if byte == UInt8(ascii: "\"") {
            fields.set(field, .string, bits: UInt64(bitPattern: Int64(try stringCode(field))))
        } else {
            try scanOtherValue(field, in: &fields, depth: depth)
        }
    }

    /// A field's value that is neither a number nor a string (out of line: rare, and it keeps `scanFieldValue` small).
    @inline(never)
    mutating func scanOtherValue(_ field: Int, in fields: inout SampleFields, depth: Int) throws(ParseError) {
        record(try parseValue(depth: depth), field: field, in: &fields)
    }

    /// A string member's code (as `record` gives it): events and orientations
    /// matched by their quoted bytes first, languages and keyboard types by
    /// the bytes of the last such value (`RawHint`), anything else read and coded.
    @inline(__always)
    mutating func stringCode(_ field: Int) throws(ParseError) -> Int {
        switch field {
        case SampleFields.event:
            if matchQuoted("\"show\"") { return 0 }
            if matchQuoted("\"hide\"") { return 1 }
            return Self.eventCode(try parseString())
        case SampleFields.orientation:
            if matchQuoted("\"portrait\"") { return 0 }
            if matchQuoted("\"landscape\"") { return 1 }
            return Self.orientationCode(try parseString())
        case SampleFields.language:
            if let code = hinted(languageHint) { return code }
            let start = index
            let code = intern(try parseString())
            languageHint = RawHint(start: start, count: index - start, code: code)
            return code
        case SampleFields.keyboardType:
            if let code = hinted(keyboardTypeHint) { return code }
            let start = index
            let code = intern(try parseString())
            keyboardTypeHint = RawHint(start: start, count: index - start, code: code)
            return code
        default:
            _ = try parseString()
            return 0
        }
    }

    /// Steps over `literal` (a quoted string) when the bytes here are exactly it.
    @inline(__always)
    mutating func matchQuoted(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count, memoryEqual(literal.utf8Start, bytes.baseAddress! + index, count) else { return false }
        index += count
        return true
    }

    /// The code of the string token here when its bytes are exactly those of
    /// `hint`'s (the same bytes read the same way), stepping over it.
    @inline(__always)
    mutating func hinted(_ hint: RawHint) -> Int? {
        guard hint.code >= 0, index + hint.count <= bytes.count,
              memoryEqual(bytes.baseAddress! + hint.start, bytes.baseAddress! + index, hint.count) else { return nil }
        index += hint.count
        return hint.code
    }

    /// 0 show, 1 hide, 2 change, -1 another string (by bytes; as `String` equality would).
    @inline(__always)
    static func eventCode(_ text: UnsafeBufferPointer<UInt8>) -> Int {
        if text.count == 4 {
            if memoryEqual(("show" as StaticString).utf8Start, text.baseAddress, 4) { return 0 }
            if memoryEqual(("hide" as StaticString).utf8Start, text.baseAddress, 4) { return 1 }
        } else if text.count == 6, memoryEqual(("change" as StaticString).utf8Start, text.baseAddress, 6) {
            return 2
        }
        return code(text, ["show", "hide", "change"])
    }

    /// 0 portrait, 1 landscape, -1 another string.
    @inline(__always)
    static func orientationCode(_ text: UnsafeBufferPointer<UInt8>) -> Int {
        if text.count == 8, memoryEqual(("portrait" as StaticString).utf8Start, text.baseAddress, 8) { return 0 }
        if text.count == 9, memoryEqual(("landscape" as StaticString).utf8Start, text.baseAddress, 9) { return 1 }
        return code(text, ["portrait", "landscape"])
    }

    /// The index of `text` in `names` (-1: none), as `String` equality would
    /// find it: no ASCII text other than the name's own bytes equals it, but a
    /// non-ASCII one may (U+212A KELVIN SIGN is equal to "K").
    static func code(_ text: UnsafeBufferPointer<UInt8>, _ names: [StaticString]) -> Int {
        if text.allSatisfy({ $0 < 0x80 }) {
            for (i, name) in names.enumerated() where name.utf8CodeUnitCount == text.count
                && memoryEqual(name.utf8Start, text.baseAddress, text.count) { return i }
            return -1
        }
        let string = String(decoding: text, as: UTF8.self)
        return names.firstIndex { $0.description == string } ?? -1
    }

    /// The index of `text` among this batch's interned strings, adding it when new.
    mutating func intern(_ text: UnsafeBufferPointer<UInt8>) -> Int {
        for i in internedBytes.indices.reversed() where internedBytes[i].count == text.count {
            let equal = internedBytes[i].withUnsafeBufferPointer { memoryEqual($0.baseAddress, text.baseAddress, text.count) }
            if equal { return i }
        }
        let string = String(decoding: text, as: UTF8.self)
        internedBytes.append(Array(text))
        interned.append(string)
        languageValid.append(FieldRules.languageProblem(string) == nil)
        keyboardTypeValid.append(KeyboardTypes.all.contains(string))
        return interned.count - 1
    }

    // MARK: One sample's checks (types here, values by `FieldRules`, in the reference's order)

    /// The interned "default", the keyboard type of a sample without one.
    mutating func defaultKeyboardTypeID() -> Int {
        if defaultKeyboardType < 0 {
            let name: StaticString = "default"
            defaultKeyboardType = intern(UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        }
        return defaultKeyboardType
    }

    /// One sample's checks; what passed, as numbers and interned strings' indices.
    ///
    /// When every member has the type its field wants (or an optional one is
    /// absent or null: `SampleFields.typesAsExpected`, one test for all
    /// fourteen), no type check can fail and the same checks run without
    /// them; otherwise each field's type is checked where the reference checks it.
    mutating func checkSample(_ fields: SampleFields) throws(FieldError) -> CheckedSample {
        fields.typesAsExpected ? try checkSample(fields, typed: true) : try checkSample(fields, typed: false)
    }

    /// The checks in the reference's order; `typed`: the types are known to be right (see `checkSample(_:)`).
    @inline(__always)
    mutating func checkSample(_ fields: SampleFields, typed: Bool) throws(FieldError) -> CheckedSample {
        let t = try number(fields, SampleFields.t, typed)
        try rules.checkTime(t, now: now)

        let eventCode = try string(fields, SampleFields.event, typed)
        guard eventCode >= 0 else { throw FieldRules.unknownEvent }
        let event: KeyboardEvent = eventCode == 0 ? .show : eventCode == 1 ? .hide : .change
        let languageID = try string(fields, SampleFields.language, typed)
        if !languageValid[languageID], let problem = FieldRules.languageProblem(interned[languageID]) {
            throw FieldError(field: "language", reason: problem)
        }
        let orientationCode = try string(fields, SampleFields.orientation, typed)
        guard orientationCode >= 0 else { throw FieldRules.unknownOrientation }
        let orientation: Orientation = orientationCode == 0 ? .portrait : .landscape
        let keyboardType: Int
        if let typeID = try optionalString(fields, SampleFields.keyboardType, typed) {
            if !keyboardTypeValid[typeID] { _ = try FieldRules.keyboardType(interned[typeID]) }
            keyboardType = typeID
        } else {
            keyboardType = defaultKeyboardTypeID()
        }
        let floating = try optionalBool(fields, SampleFields.floating, typed) ?? false
        let hardware = try optionalBool(fields, SampleFields.hardware, typed) ?? false
        let preloaded = try optionalBool(fields, SampleFields.preloaded, typed) ?? false

        let height = try number(fields, SampleFields.height, typed)
        try FieldRules.checkHeight(height, event: event, hardware: hardware)
        let accessory = try optionalNumber(fields, SampleFields.accessory, typed) ?? 0
        try FieldRules.checkPart(accessory, of: height, field: "accessory_height")
        let safeArea = try optionalNumber(fields, SampleFields.safeArea, typed) ?? 0
        try FieldRules.checkPart(safeArea, of: height, field: "safe_area_bottom")
        let duration = try number(fields, SampleFields.duration, typed)
        try FieldRules.checkDuration(duration)
        let curve = try FieldRules.curve(try number(fields, SampleFields.curve, typed))
        let coldStart = try optionalNumber(fields, SampleFields.coldStart, typed)
        try FieldRules.checkColdStart(coldStart, event: event)
        return CheckedSample(
            t: t, event: event, language: languageID, orientation: orientation, keyboardType: keyboardType,
            height: height, accessoryHeight: accessory, safeAreaBottom: safeArea, duration: duration,
            curve: curve, coldStartMs: coldStart, preloaded: preloaded, floating: floating, hardwareKeyboard: hardware)
    }

    /// A checked sample as a `Sample` (its strings from this batch's interned ones).
    func sample(_ checked: CheckedSample) -> Sample {
        Sample(
            t: checked.t, event: checked.event, language: interned[checked.language], orientation: checked.orientation,
            keyboardType: interned[checked.keyboardType], height: checked.height, accessoryHeight: checked.accessoryHeight,
            safeAreaBottom: checked.safeAreaBottom, duration: checked.duration, curve: checked.curve,
            coldStartMs: checked.coldStartMs, preloaded: checked.preloaded, floating: checked.floating,
            hardwareKeyboard: checked.hardwareKeyboard)
    }

    /// A member's value bits when it holds `kind` (nil when absent or null); throws, naming the field, for another type
    /// (`typed`: the type is known to be `kind` when present).
    @inline(__always)
    func present(_ fields: SampleFields, _ field: Int, _ kind: ScannedKind, _ expected: String, _ typed: Bool) throws(FieldError) -> UInt64? {
        let found = fields.kind(field)
        guard found != .absent, found != .null else { return nil }
        guard typed || found == kind else {
            throw FieldError(field: SampleFields.names[field], reason: "must be \(expected), not \(found.typeName)")
        }
        return fields.bits(field)
    }

    /// As `present`, for a member that must be there (`typed`: it is, with type `kind`).
    @inline(__always)
    func required(_ fields: SampleFields, _ field: Int, _ kind: ScannedKind, _ expected: String, _ typed: Bool) throws(FieldError) -> UInt64 {
        if typed { return fields.bits(field) }
        guard let bits = try present(fields, field, kind, expected, false) else {
            throw FieldError(field: SampleFields.names[field], reason: "is required")
        }
        return bits
    }

    @inline(__always)
    func number(_ fields: SampleFields, _ field: Int, _ typed: Bool) throws(FieldError) -> Double {
        Double(bitPattern: try required(fields, field, .number, "a number", typed))
    }

    @inline(__always)
    func optionalNumber(_ fields: SampleFields, _ field: Int, _ typed: Bool) throws(FieldError) -> Double? {
        try present(fields, field, .number, "a number", typed).map(Double.init(bitPattern:))
    }

    /// A required string member's code.
    @inline(__always)
    func string(_ fields: SampleFields, _ field: Int, _ typed: Bool) throws(FieldError) -> Int {
        Int(Int64(bitPattern: try required(fields, field, .string, "a string", typed)))
    }

    @inline(__always)
    func optionalString(_ fields: SampleFields, _ field: Int, _ typed: Bool) throws(FieldError) -> Int? {
        try present(fields, field, .string, "a string", typed).map { Int(Int64(bitPattern: $0)) }
    }

    @inline(__always)
    func optionalBool(_ fields: SampleFields, _ field: Int, _ typed: Bool) throws(FieldError) -> Bool? {
        try present(fields, field, .bool, "a boolean", typed).map { $0 != 0 }
    }
}
