/// The single pass. Its syntax checks are the reference `JSONParser`'s, step
/// for step (same order, same offsets); what the rules need is recorded as it
/// goes and judged in `finish()`. Its parts: the document and its objects
/// here, `+Samples` (one sample's checks), `+Keys` (member names), `+Grammar`
/// (values skipped), `+Strings` (SWAR string scanning), `+Numbers`.
struct IntakeScanner {
    typealias ParseError = JSONSyntaxError

    let bytes: UnsafeBufferPointer<UInt8>
    let rules: FieldRules
    let now: Double
    /// Accepted samples are counted (`BatchIntake.count`), not materialised as `Sample`s.
    let counting: Bool
    let maxDepth = JSONSyntaxError.maxDepth
    var index = 0
    /// Unescaped string bytes (allocated at the first escape; freed by the caller).
    var scratch: UnsafeMutablePointer<UInt8>?

    // What the document held.
    var rootKind: ScannedKind = .absent
    var batchIDKind: ScannedKind = .absent
    var batchID: String?
    var deviceKind: ScannedKind = .absent
    var device = DeviceMembers()
    var samplesKind: ScannedKind = .absent
    var entryCount = 0
    var samples: [Sample] = []
    var counter = SampleCounter()
    var rejected: [SampleError] = []

    // Interned strings of this batch (language, keyboard type): bytes, string, validity.
    var internedBytes: [[UInt8]] = []
    var interned: [String] = []
    var languageValid: [Bool] = []
    var keyboardTypeValid: [Bool] = []
    /// The interned "default" (what a sample without `keyboard_type` has), once needed.
    var defaultKeyboardType = -1
    /// The field of the key at each of a sample's first 16 positions in the
    /// last sample that had a key there, 4 bits each (15: another key), for `scanSample`'s guess.
    var keyOrder = UInt64.max

    init(bytes: UnsafeBufferPointer<UInt8>, rules: FieldRules, now: Double, counting: Bool = false) {
        self.bytes = bytes
        self.rules = rules
        self.now = now
        self.counting = counting
    }

    func error(_ reason: String) -> ParseError { ParseError(reason: reason, offset: index) }

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

    /// The batch with its samples (`BatchIntake.validate`).
    mutating func finish() throws(FieldError) -> ValidatedBatch {
        let (batchID, device) = try checkBatch()
        return ValidatedBatch(batchID: batchID, device: device, samples: samples, rejected: rejected)
    }

    /// The batch with its samples' counts (`BatchIntake.count`).
    mutating func finishCounted() throws(FieldError) -> CountedBatch {
        let (batchID, device) = try checkBatch()
        let keys = counter.series.map { series in
            SeriesKey(model: device.model, osMajor: device.osMajor, language: interned[series.language],
                      orientation: series.orientation, keyboardType: interned[series.keyboardType])
        }
        return CountedBatch(batchID: batchID, device: device, rejected: rejected, keys: keys, counts: counter.counts,
                            sizes: counter.sizes, sampleKeys: counter.sampleKeys)
    }

    /// The batch-level checks, in the reference validator's order.
    mutating func checkBatch() throws(FieldError) -> (batchID: String, device: Device) {
        guard rootKind == .object else {
            throw FieldError(field: "", reason: "body must be a JSON object, not \(rootKind.typeName)")
        }
        guard batchIDKind != .absent, batchIDKind != .null else {
            throw FieldError(field: "batch_id", reason: "is required")
        }
        guard let batchID else { throw FieldError(field: "batch_id", reason: "must be a UUID string") }
        let deviceValue: DeviceValue = switch deviceKind {
        case .object: .object(device)
        case .absent, .null: .missing
        default: .other(typeName: deviceKind.typeName)
        }
        let device = try FieldRules.device(deviceValue)
        guard samplesKind != .absent, samplesKind != .null else {
            throw FieldError(field: "samples", reason: "is required")
        }
        guard samplesKind == .array else {
            throw FieldError(field: "samples", reason: "must be an array, not \(samplesKind.typeName)")
        }
        try rules.checkSampleCount(entryCount)
        return (batchID, device)
    }

    static let rootKeys = ["batch_id", "device", "samples"]
    static let deviceKeys = DeviceMembers.names

    /// The top-level object (as `JSONParser.parseObject`), recording batch_id, device and samples.
    mutating func scanRoot(depth: Int) throws(ParseError) {
        guard try !open(closingWith: UInt8(ascii: "}"), depth: depth) else { return }
        var seen: UInt8 = 0
        var others: Set<String> = []
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

    /// `device` (as `JSONParser.parseObject`): the members the rules read, no tree.
    mutating func scanDevice(depth: Int) throws(ParseError) {
        let empty = try open(closingWith: UInt8(ascii: "}"), depth: depth)
        device = DeviceMembers()
        guard !empty else { return }
        var seen: UInt8 = 0
        var others: Set<String> = []
        while true {
            let (field, name) = try readKey(Self.deviceKeys)
            let value = try parseValue(depth: depth)
            if field >= 0 {
                switch value {
                case .string(let text): device.set(field, .string(String(decoding: text, as: UTF8.self)))
                case .null: device.set(field, .null)
                default: device.set(field, .other(typeName: value.kind.typeName))
                }
            }
            try checkDuplicate(field, name, seen: &seen, others: &others)
            guard try endOfMember() else { return }
        }
    }

    /// `samples` (as `JSONParser.parseArray`): each entry is validated as soon as it closes.
    mutating func scanSamples(depth: Int) throws(ParseError) {
        let empty = try open(closingWith: UInt8(ascii: "]"), depth: depth)
        entryCount = 0
        samples = []
        counter = SampleCounter()
        rejected = []
        guard !empty else { return }
        if !counting { samples.reserveCapacity(min(rules.maxSamples, bytes.count / 64 + 1)) }
        while true {
            skipWhitespace()
            let entry = entryCount
            entryCount += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "{") {
                let fields = try scanSample(depth: depth + 1)
                if entry < rules.maxSamples {
                    do {
                        let checked = try checkSample(fields)
                        if counting {
                            counter.add(checked)
                        } else {
                            samples.append(sample(checked))
                        }
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
            guard try endOfElement() else { return }
        }
    }

    /// One sample object (as `JSONParser.parseObject`), its members in `SampleFields`.
    mutating func scanSample(depth: Int) throws(ParseError) -> SampleFields {
        var fields = SampleFields()
        if try open(closingWith: UInt8(ascii: "}"), depth: depth) { return fields }
        var seen: UInt16 = 0
        var others: Set<String>?
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
            if position < 16, case let predicted = Int(truncatingIfNeeded: keyOrder >> UInt64(position * 4)) & 15, predicted < 15,
               case let quoted = Self.quotedSampleKey(predicted), index + quoted.utf8CodeUnitCount <= bytes.count,
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
                if position < 16 {
                    let shift = UInt64(position * 4)
                    keyOrder = keyOrder & ~(15 << shift) | UInt64(field < 0 ? 15 : field) << shift
                }
            }
            position += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: ":") {
                index += 1
                skipWhitespace()
            } else {
                try expectColon()
            }
            let value = try parseValue(depth: depth)
            if field >= 0 {
                record(value, field: field, in: &fields)
                let bit = UInt16(1) << UInt16(field)
                guard seen & bit == 0 else { throw duplicate(name ?? SampleFields.names[field]) }
                seen |= bit
            } else if let name {
                guard others?.insert(name).inserted ?? true else { throw duplicate(name) }
                if others == nil { others = [name] }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else {
                guard try endOfMember() else { return fields }
            }
        }
    }
}
