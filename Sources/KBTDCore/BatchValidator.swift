/// Turns a parsed JSON document into a `ValidatedBatch`, applying every rule of
/// docs/http-api.md. Batch-level faults throw a `FieldError`; sample faults reject
/// that sample alone (partial success).
public struct BatchValidator: Sendable {
    /// Most samples one batch may carry.
    public var maxSamples: Int
    /// Samples older than this many seconds before `now` are rejected.
    public var maxAge: Double = 30 * 86_400
    /// Samples more than this many seconds after `now` are rejected.
    public var maxSkewAhead: Double = 86_400

    public init(maxSamples: Int = 10_000) {
        self.maxSamples = maxSamples
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
        guard case .string(let rawID) = idValue, let batchID = Self.canonicalUUID(rawID) else {
            throw FieldError(field: "batch_id", reason: "must be a UUID string")
        }
        let device = try validateDevice(document["device"])
        guard let samplesValue = document["samples"], samplesValue != .null else {
            throw FieldError(field: "samples", reason: "is required")
        }
        guard case .array(let entries) = samplesValue else {
            throw FieldError(field: "samples", reason: "must be an array, not \(samplesValue.typeName)")
        }
        guard (1...maxSamples).contains(entries.count) else {
            throw FieldError(field: "samples", reason: "must hold 1 to \(maxSamples) entries, got \(entries.count)")
        }
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

    private func validateDevice(_ value: JSONValue?) throws(FieldError) -> Device {
        guard let value, value != .null else { throw FieldError(field: "device", reason: "is required") }
        guard case .object = value else {
            throw FieldError(field: "device", reason: "must be an object, not \(value.typeName)")
        }
        guard case .string(let model)? = value["model"] else {
            throw FieldError(field: "device.model", reason: value["model"] == nil ? "is required" : "must be a string")
        }
        if let problem = Self.modelProblem(model) { throw FieldError(field: "device.model", reason: problem) }
        guard case .string(let os)? = value["os"] else {
            throw FieldError(field: "device.os", reason: value["os"] == nil ? "is required" : "must be a string")
        }
        guard let osMajor = Self.osMajor(os) else {
            throw FieldError(field: "device.os", reason: "must be a dotted version like 26.1 or 18.6.2")
        }
        let app = try optionalString(value["app"], field: "device.app", maxLength: 128)
        let appVersion = try optionalString(value["app_version"], field: "device.app_version", maxLength: 128)
        var screen: ScreenSize?
        if let text = try optionalString(value["screen"], field: "device.screen", maxLength: 128) {
            guard let parsed = ScreenSize(text) else {
                throw FieldError(field: "device.screen", reason: ScreenSize.problem(text) ?? "is not a screen size")
            }
            screen = parsed
        }
        return Device(model: model, os: os, osMajor: osMajor, app: app, appVersion: appVersion, screen: screen)
    }

    private func optionalString(_ value: JSONValue?, field: String, maxLength: Int) throws(FieldError) -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let string)?:
            // Code points, as JSON Schema's maxLength counts them (not grapheme clusters).
            guard string.unicodeScalars.count <= maxLength else {
                throw FieldError(field: field, reason: "must be at most \(maxLength) characters")
            }
            return string
        case let other?:
            throw FieldError(field: field, reason: "must be a string, not \(other.typeName)")
        }
    }

    private func validateSample(_ entry: JSONValue, now: Double) throws(FieldError) -> Sample {
        guard case .object = entry else {
            throw FieldError(field: "sample", reason: "must be an object, not \(entry.typeName)")
        }
        let t = try number(entry, "t")
        guard t >= now - maxAge else { throw FieldError(field: "t", reason: "is older than 30 days") }
        guard t <= now + maxSkewAhead else { throw FieldError(field: "t", reason: "is more than 1 day in the future") }

        let eventName = try string(entry, "event")
        guard let event = KeyboardEvent(rawValue: eventName) else {
            throw FieldError(field: "event", reason: "must be show, hide or change")
        }
        let language = try string(entry, "language")
        if let problem = Self.languageProblem(language) { throw FieldError(field: "language", reason: problem) }
        let orientation = try Self.orientation(try string(entry, "orientation"))
        let keyboardType = try Self.keyboardType(try optionalString(entry, "keyboard_type") ?? "default")
        let floating = try optionalBool(entry, "floating") ?? false
        let hardware = try optionalBool(entry, "hardware_keyboard") ?? false
        let preloaded = try optionalBool(entry, "preloaded") ?? false

        let height = try number(entry, "height")
        guard (0...2000).contains(height) else { throw FieldError(field: "height", reason: "must be between 0 and 2000") }
        if event != .hide, !hardware, height <= 0 {
            throw FieldError(field: "height", reason: "must be greater than 0 for \(event.rawValue) events without a hardware keyboard")
        }
        let accessory = try optionalNumber(entry, "accessory_height") ?? 0
        guard (0...height).contains(accessory) else {
            throw FieldError(field: "accessory_height", reason: "must be between 0 and height")
        }
        let safeArea = try optionalNumber(entry, "safe_area_bottom") ?? 0
        guard (0...height).contains(safeArea) else {
            throw FieldError(field: "safe_area_bottom", reason: "must be between 0 and height")
        }
        let duration = try number(entry, "duration")
        guard (0...5).contains(duration) else { throw FieldError(field: "duration", reason: "must be between 0 and 5 seconds") }
        let curveValue = try number(entry, "curve")
        guard curveValue.rounded() == curveValue, (0...15).contains(curveValue) else {
            throw FieldError(field: "curve", reason: "must be an integer between 0 and 15")
        }
        let coldStart = try optionalNumber(entry, "cold_start_ms")
        if let coldStart {
            guard event == .show else { throw FieldError(field: "cold_start_ms", reason: "is only allowed on show events") }
            guard coldStart > 0, coldStart <= 60_000 else {
                throw FieldError(field: "cold_start_ms", reason: "must be greater than 0 and at most 60000")
            }
        }
        return Sample(
            t: t, event: event, language: language, orientation: orientation, keyboardType: keyboardType,
            height: height, accessoryHeight: accessory, safeAreaBottom: safeArea, duration: duration,
            curve: Int(curveValue), coldStartMs: coldStart, preloaded: preloaded, floating: floating,
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

    /// `portrait` or `landscape` (field `orientation`, in a sample and in a height question).
    public static func orientation(_ text: String) throws(FieldError) -> Orientation {
        guard let orientation = Orientation(rawValue: text) else {
            throw FieldError(field: "orientation", reason: "must be portrait or landscape")
        }
        return orientation
    }

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

    /// The lower-cased 8-4-4-4-12 form of a UUID string, or nil.
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
}
