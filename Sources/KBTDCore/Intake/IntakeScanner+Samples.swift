extension IntakeScanner {
    /// What the validator needs of one sample member.
    mutating func slot(_ value: ScannedValue, field: Int) -> SampleSlot {
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

    static let eventNames: [StaticString] = ["show", "hide", "change"]
    static let orientationNames: [StaticString] = ["portrait", "landscape"]

    /// The index of `text` in `names` (-1: none), by bytes for ASCII, else as `String` equality would.
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

    func validateSample(_ fields: SampleFields) throws(FieldError) -> Sample {
        let t = try number(fields, SampleFields.t)
        try rules.checkTime(t, now: now)

        let eventCode = try string(fields, SampleFields.event)
        guard eventCode >= 0 else { throw FieldRules.unknownEvent }
        let event: KeyboardEvent = eventCode == 0 ? .show : eventCode == 1 ? .hide : .change
        let languageID = try string(fields, SampleFields.language)
        if !languageValid[languageID], let problem = FieldRules.languageProblem(interned[languageID]) {
            throw FieldError(field: "language", reason: problem)
        }
        let orientationCode = try string(fields, SampleFields.orientation)
        guard orientationCode >= 0 else { throw FieldRules.unknownOrientation }
        let orientation: Orientation = orientationCode == 0 ? .portrait : .landscape
        let keyboardType: String
        if let typeID = try optionalString(fields, SampleFields.keyboardType) {
            keyboardType = keyboardTypeValid[typeID] ? interned[typeID] : try FieldRules.keyboardType(interned[typeID])
        } else {
            keyboardType = "default"
        }
        let floating = try optionalBool(fields, SampleFields.floating) ?? false
        let hardware = try optionalBool(fields, SampleFields.hardware) ?? false
        let preloaded = try optionalBool(fields, SampleFields.preloaded) ?? false

        let height = try number(fields, SampleFields.height)
        try FieldRules.checkHeight(height, event: event, hardware: hardware)
        let accessory = try optionalNumber(fields, SampleFields.accessory) ?? 0
        try FieldRules.checkPart(accessory, of: height, field: "accessory_height")
        let safeArea = try optionalNumber(fields, SampleFields.safeArea) ?? 0
        try FieldRules.checkPart(safeArea, of: height, field: "safe_area_bottom")
        let duration = try number(fields, SampleFields.duration)
        try FieldRules.checkDuration(duration)
        let curve = try FieldRules.curve(try number(fields, SampleFields.curve))
        let coldStart = try optionalNumber(fields, SampleFields.coldStart)
        try FieldRules.checkColdStart(coldStart, event: event)
        return Sample(
            t: t, event: event, language: interned[languageID], orientation: orientation, keyboardType: keyboardType,
            height: height, accessoryHeight: accessory, safeAreaBottom: safeArea, duration: duration,
            curve: curve, coldStartMs: coldStart, preloaded: preloaded, floating: floating,
            hardwareKeyboard: hardware)
    }

    /// A member's slot when it holds `kind` (nil when absent or null); throws, naming the field, for another type.
    @inline(__always)
    func present(_ fields: SampleFields, _ field: Int, _ kind: ScannedKind, _ expected: String) throws(FieldError) -> SampleSlot? {
        let slot = fields[field]
        guard slot.kind != .absent, slot.kind != .null else { return nil }
        guard slot.kind == kind else {
            throw FieldError(field: SampleFields.names[field], reason: "must be \(expected), not \(slot.kind.typeName)")
        }
        return slot
    }

    /// As `present`, for a member that must be there.
    @inline(__always)
    func required(_ fields: SampleFields, _ field: Int, _ kind: ScannedKind, _ expected: String) throws(FieldError) -> SampleSlot {
        guard let slot = try present(fields, field, kind, expected) else {
            throw FieldError(field: SampleFields.names[field], reason: "is required")
        }
        return slot
    }

    func number(_ fields: SampleFields, _ field: Int) throws(FieldError) -> Double {
        try required(fields, field, .number, "a number").number
    }

    func optionalNumber(_ fields: SampleFields, _ field: Int) throws(FieldError) -> Double? {
        try present(fields, field, .number, "a number")?.number
    }

    /// A required string member's code.
    func string(_ fields: SampleFields, _ field: Int) throws(FieldError) -> Int {
        try required(fields, field, .string, "a string").code
    }

    func optionalString(_ fields: SampleFields, _ field: Int) throws(FieldError) -> Int? {
        try present(fields, field, .string, "a string")?.code
    }

    func optionalBool(_ fields: SampleFields, _ field: Int) throws(FieldError) -> Bool? {
        try present(fields, field, .bool, "a boolean")?.flag
    }
}
