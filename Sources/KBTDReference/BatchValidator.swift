import KBTDCore

/// The reference validator: turns a parsed JSON document (`JSONParser`) into
/// a `ValidatedBatch` by `FieldRules`, reading types from the tree where
/// `BatchIntake` reads them from bytes. Batch-level faults throw a
/// `FieldError`; sample faults reject that sample alone (partial success).
/// Production code runs `BatchIntake`; this is its oracle (`IntakeOracle`).
///
///     let batch = try BatchValidator(maxSamples: 10_000).validate(json: bytes, now: now)
public struct BatchValidator: Sendable {
    /// The limits and value rules (the intake's own).
    public var rules: FieldRules

    public init(maxSamples: Int = 10_000) {
        self.rules = FieldRules(maxSamples: maxSamples)
    }

    public init(rules: FieldRules) {
        self.rules = rules
    }

    /// Parses and validates raw JSON bytes. `now` is Unix seconds.
    public func validate(json bytes: some Collection<UInt8>, now: Double) throws(FieldError) -> ValidatedBatch {
        let document: JSONValue
        do {
            document = try JSONParser.parse(bytes)
        } catch {
            throw FieldError(field: "", reason: "body is not valid JSON: \(error)")
        }
        return try validate(document: document, now: now)
    }

    public func validate(document: JSONValue, now: Double) throws(FieldError) -> ValidatedBatch {
        guard case .object = document else {
            throw FieldError(field: "", reason: "body must be a JSON object, not \(document.typeName)")
        }
        guard let idValue = document["batch_id"], idValue != .null else {
            throw FieldError(field: "batch_id", reason: "is required")
        }
        guard case .string(let rawID) = idValue, let batchID = FieldRules.canonicalUUID(rawID) else {
            throw FieldError(field: "batch_id", reason: "must be a UUID string")
        }
        let device = try validateDevice(document["device"])
        guard let samplesValue = document["samples"], samplesValue != .null else {
            throw FieldError(field: "samples", reason: "is required")
        }
        guard case .array(let entries) = samplesValue else {
            throw FieldError(field: "samples", reason: "must be an array, not \(samplesValue.typeName)")
        }
        try rules.checkSampleCount(entries.count)
        var samples: [Sample] = []
        samples.reserveCapacity(entries.count)
        var rejected: [SampleError] = []
        for (index, entry) in entries.enumerated() {
            do {
                samples.append(try validateSample(entry, now: now))
            } catch {
                rejected.append(SampleError(index: index, error))
            }
        }
        return ValidatedBatch(batchID: batchID, device: device, samples: samples, rejected: rejected)
    }

    /// `device` as `FieldRules.device` reads it: the members it checks, typed by the tree.
    func validateDevice(_ value: JSONValue?) throws(FieldError) -> Device {
        guard let value, value != .null else { return try FieldRules.device(.missing) }
        guard case .object(let object) = value else { return try FieldRules.device(.other(typeName: value.typeName)) }
        var members = DeviceMembers()
        for (field, name) in DeviceMembers.names.enumerated() {
            switch object[name] {
            case nil: break
            case .null?: members.set(field, .null)
            case .string(let string)?: members.set(field, .string(string))
            case let other?: members.set(field, .other(typeName: other.typeName))
            }
        }
        return try FieldRules.device(.object(members))
    }

    private func validateSample(_ entry: JSONValue, now: Double) throws(FieldError) -> Sample {
        guard case .object = entry else {
            throw FieldError(field: "sample", reason: "must be an object, not \(entry.typeName)")
        }
        let t = try number(entry, "t")
        try rules.checkTime(t, now: now)

        let eventName = try string(entry, "event")
        guard let event = KeyboardEvent(rawValue: eventName) else { throw FieldRules.unknownEvent }
        let language = try string(entry, "language")
        if let problem = FieldRules.languageProblem(language) { throw FieldError(field: "language", reason: problem) }
        let orientation = try FieldRules.orientation(try string(entry, "orientation"))
        let keyboardType = try FieldRules.keyboardType(try optionalString(entry, "keyboard_type") ?? "default")
        let floating = try optionalBool(entry, "floating") ?? false
        let hardware = try optionalBool(entry, "hardware_keyboard") ?? false
        let preloaded = try optionalBool(entry, "preloaded") ?? false

        let height = try number(entry, "height")
        try FieldRules.checkHeight(height, event: event, hardware: hardware)
        let accessory = try optionalNumber(entry, "accessory_height") ?? 0
        try FieldRules.checkPart(accessory, of: height, field: "accessory_height")
        let safeArea = try optionalNumber(entry, "safe_area_bottom") ?? 0
        try FieldRules.checkPart(safeArea, of: height, field: "safe_area_bottom")
        let duration = try number(entry, "duration")
        try FieldRules.checkDuration(duration)
        let curve = try FieldRules.curve(try number(entry, "curve"))
        let coldStart = try optionalNumber(entry, "cold_start_ms")
        try FieldRules.checkColdStart(coldStart, event: event)
        return Sample(
            t: t, event: event, language: language, orientation: orientation, keyboardType: keyboardType,
            height: height, accessoryHeight: accessory, safeAreaBottom: safeArea, duration: duration,
            curve: curve, coldStartMs: coldStart, preloaded: preloaded, floating: floating,
            hardwareKeyboard: hardware)
    }

    private func number(_ object: JSONValue, _ field: String) throws(FieldError) -> Double {
        guard let value = object[field], value != .null else { throw FieldError(field: field, reason: "is required") }
        guard case .number(let number) = value else {
            throw FieldError(field: field, reason: "must be a number, not \(value.typeName)")
        }
        return number
    }

    private func optionalNumber(_ object: JSONValue, _ field: String) throws(FieldError) -> Double? {
        guard let value = object[field], value != .null else { return nil }
        guard case .number(let number) = value else {
            throw FieldError(field: field, reason: "must be a number, not \(value.typeName)")
        }
        return number
    }

    private func string(_ object: JSONValue, _ field: String) throws(FieldError) -> String {
        guard let value = object[field], value != .null else { throw FieldError(field: field, reason: "is required") }
        guard case .string(let string) = value else {
            throw FieldError(field: field, reason: "must be a string, not \(value.typeName)")
        }
        return string
    }

    private func optionalString(_ object: JSONValue, _ field: String) throws(FieldError) -> String? {
        guard let value = object[field], value != .null else { return nil }
        guard case .string(let string) = value else {
            throw FieldError(field: field, reason: "must be a string, not \(value.typeName)")
        }
        return string
    }

    private func optionalBool(_ object: JSONValue, _ field: String) throws(FieldError) -> Bool? {
        guard let value = object[field], value != .null else { return nil }
        guard case .bool(let bool) = value else {
            throw FieldError(field: field, reason: "must be a boolean, not \(value.typeName)")
        }
        return bool
    }
}
