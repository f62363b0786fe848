/// `JSONParser`'s grammar, without the tree: whitespace, literals, and the
/// values the intake does not read (checked and skipped).
extension IntakeScanner {
    /// Inlined for the common case (no whitespace: the next byte is above 0x20).
    @inline(__always)
    mutating func skipWhitespace() {
        guard index < bytes.count, bytes[index] <= 0x20 else { return }
        skipWhitespaceBytes()
    }

    mutating func skipWhitespaceBytes() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// A value anywhere (as `JSONParser.parseValue`); arrays and objects are checked and skipped.
    mutating func parseValue(depth: Int) throws(ParseError) -> ScannedValue {
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

    mutating func expectLiteral(_ literal: StaticString) throws(ParseError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count, memoryEqual(literal.utf8Start, bytes.baseAddress! + index, count) else {
            throw error("invalid literal")
        }
        index += count
    }

    mutating func skipObject(depth: Int) throws(ParseError) {
        guard try !open(closingWith: UInt8(ascii: "}"), depth: depth) else { return }
        var keys: Set<String> = []
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

    mutating func skipArray(depth: Int) throws(ParseError) {
        guard try !open(closingWith: UInt8(ascii: "]"), depth: depth) else { return }
        while true {
            skipWhitespace()
            _ = try parseValue(depth: depth)
            guard try endOfElement() else { return }
        }
    }
}
