extension IntakeScanner {
    /// Reads `"key"` and the colon after it: the key's index in `known` (-1:
    /// another key) and the key (compared as `String`s, as the parser's dictionary does).
    mutating func readKey(_ known: [String]) throws(ParseError) -> (Int, String) {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a string key") }
        let key = try parseString()
        let text = String(decoding: key, as: UTF8.self)
        try expectColon()
        return (known.firstIndex(where: { $0 == text }) ?? -1, text)
    }

    mutating func expectColon() throws(ParseError) {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
        index += 1
        skipWhitespace()
    }

    /// Throws `JSONParser`'s "duplicate key" error when `name` (field `field`, -1: another key) was seen before.
    func checkDuplicate(_ field: Int, _ name: String, seen: inout UInt8, others: inout Set<String>) throws(ParseError) {
        if field < 0 {
            guard others.insert(name).inserted else { throw duplicate(name) }
        } else {
            let bit = UInt8(1) << UInt8(field)
            guard seen & bit == 0 else { throw duplicate(name) }
            seen |= bit
        }
    }

    func duplicate(_ key: String) -> ParseError { error("duplicate key \"\(key.prefix(64))\"") }

    /// At a container's opening `{` or `[`: checks the depth, steps over the opening byte and
    /// answers whether the container is empty (`close` is next, and is stepped over too).
    @inline(__always)
    mutating func open(closingWith close: UInt8, depth: Int) throws(ParseError) -> Bool {
        guard depth <= maxDepth else { throw error("nesting deeper than \(maxDepth) levels") }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == close {
            index += 1
            return true
        }
        return false
    }

    /// After an array's element: `,` (true: another follows) or `]` (false).
    mutating func endOfElement() throws(ParseError) -> Bool {
        skipWhitespace()
        guard index < bytes.count else { throw error("unexpected end of input") }
        if bytes[index] == UInt8(ascii: ",") {
            index += 1
            return true
        } else if bytes[index] == UInt8(ascii: "]") {
            index += 1
            return false
        }
        throw error("expected ',' or ']'")
    }

    /// After a member: `,` (true: another follows) or `}` (false).
    mutating func endOfMember() throws(ParseError) -> Bool {
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

    /// The sample field a key names by its bytes (-1: not a plain-ASCII field name).
    @inline(__always)
    static func sampleField(_ key: UnsafeBufferPointer<UInt8>) -> Int {
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

    /// `FieldRules.canonicalUUID` over bytes.
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
}
