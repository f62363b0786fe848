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
