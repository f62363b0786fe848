/// The single pass. Its syntax checks are the reference `JSONParser`'s, step
/// for step (same order, same offsets); what the rules need is recorded as it
/// goes and judged in `finish()`. Its parts: the document and its objects
/// here, `+Samples` (one sample's checks), `+Keys` (member names), `+Grammar`
/// (values skipped), `+Strings` (SWAR string scanning), `+Numbers`.
struct IntakeScanner {
    /// A string token already read (its bytes at `start`, quotes included) and what it was coded as.
    struct RawHint {
        var start = 0
        var count = 0
        var code = -1
    }

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
    /// The key token (`"name":`) at each of a sample's first 16 positions in the
    /// last sample that had a field's key there, for `scanSample`'s guess: its
    /// offset in `bytes` (32 bits), its length (8 bits) and its field (above); 0: none.
    var keyHints: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                   UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    /// Where the last language and keyboard type string tokens lay in `bytes` and their interned index.
    var languageHint = RawHint()
    var keyboardTypeHint = RawHint()

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
        if counting {
            counter.sampleKeys.reserveCapacity(min(rules.maxSamples, bytes.count / 64 + 1))
        } else {
            samples.reserveCapacity(min(rules.maxSamples, bytes.count / 64 + 1))
        }
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
            // Clients write every sample's members in the same order: when the
            // bytes here are exactly the `"name":` the previous sample had at
            // this position, the key is that one's field (the same bytes read
            // the same way) and the colon is read too.
            if position < 16, case let hint = keyHint(position), hint != 0,
               case let length = Int(truncatingIfNeeded: hint >> 32) & 0xFF, index + length <= bytes.count,
               memoryEqual(bytes.baseAddress! + Int(truncatingIfNeeded: hint & 0xFFFF_FFFF), bytes.baseAddress! + index, length) {
                field = Int(truncatingIfNeeded: hint >> 40)
                index += length
                position += 1
                skipWhitespace()
            } else {
                field = try scanKey(position: position, in: &fields, seen: &seen, others: &others, depth: depth)
                position += 1
                if field < 0 {
                    guard try endOfMember() else { return fields }
                    continue
                }
            }
            // A number or a string here (as `scanFieldValue` reads them, without its call), the rest
            // (other types, the end of the body) in `scanFieldValue`.
            if index < bytes.count, case let byte = bytes[index], byte &- UInt8(ascii: "0") < 10 || byte == UInt8(ascii: "-") {
                fields.set(field, .number, bits: try parseNumberFast().bitPattern)
            } else if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
                fields.set(field, .string, bits: UInt64(bitPattern: Int64(try stringCode(field))))
            } else {
                try scanFieldValue(field, in: &fields, depth: depth)
            }
            let bit = UInt16(1) &<< UInt16(truncatingIfNeeded: field)  // field: 0-13
            guard seen & bit == 0 else { throw duplicate(SampleFields.names[field]) }
            seen |= bit
            if index < bytes.count, bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else {
                guard try endOfMember() else { return fields }
            }
        }
    }

    /// A sample member's key read in full (the previous sample's key bytes at
    /// `position` did not match) and its colon: the key's field, its hint
    /// for the next sample recorded. Any other key (-1) has its value and
    /// duplicate check read here too (`scanOtherMember`). Out of line: the
    /// member loop stays small (the first sample of a batch comes this way).
    @inline(never)
    mutating func scanKey(position: Int, in fields: inout SampleFields, seen: inout UInt16, others: inout Set<String>?,
                          depth: Int) throws(ParseError) -> Int {
        let keyStart = index
        let key = try parseString()
        let field = Self.sampleField(key)
        if field < 0 {
            // Any other key as a `String` (as the parser's dictionary compares keys).
            if position < 16 { setKeyHint(position, 0) }
            try scanOtherMember(String(decoding: key, as: UTF8.self), in: &fields, seen: &seen, others: &others, depth: depth)
            return -1
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ":") {
            index += 1
            if position < 16 {
                let length = index - keyStart
                setKeyHint(position, keyStart < 1 << 32 && length < 256
                           ? UInt64(field) << 40 | UInt64(length) << 32 | UInt64(keyStart) : 0)
            }
            skipWhitespace()
        } else {
            if position < 16 { setKeyHint(position, 0) }
            try expectColon()
        }
        return field
    }

    /// (Mutating: read in place, not from a copy of the 16 words.)
    @inline(__always)
    mutating func keyHint(_ position: Int) -> UInt64 {
        withUnsafeMutableBytes(of: &keyHints) { $0.load(fromByteOffset: position &* 8, as: UInt64.self) }
    }

    @inline(__always)
    mutating func setKeyHint(_ position: Int, _ hint: UInt64) {
        withUnsafeMutableBytes(of: &keyHints) { $0.storeBytes(of: hint, toByteOffset: position &* 8, as: UInt64.self) }
    }

    /// A sample member whose key is not a field name in plain bytes: its colon and value,
    /// recorded when the key still equals a field name as a `String`, and its duplicate check.
    mutating func scanOtherMember(_ name: String, in fields: inout SampleFields, seen: inout UInt16,
                                  others: inout Set<String>?, depth: Int) throws(ParseError) {
        try expectColon()
        let value = try parseValue(depth: depth)
        if let field = SampleFields.names.firstIndex(where: { $0 == name }) {
            record(value, field: field, in: &fields)
            let bit = UInt16(1) << UInt16(field)
            guard seen & bit == 0 else { throw duplicate(name) }
            seen |= bit
        } else {
            guard others?.insert(name).inserted ?? true else { throw duplicate(name) }
            if others == nil { others = [name] }
        }
    }
}
