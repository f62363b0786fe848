/// A value that breaks a rule: the field (a JSON path like `device.model`, a
/// query parameter, empty for the whole body) and why. Every 400 kbtd sends
/// renders one the same way (`detail` "field: reason", `field`), and a
/// rejected sample in a receipt is one at an index.
///
///     throw FieldError(field: "orientation", reason: "must be portrait or landscape")
public struct FieldError: Error, Sendable, Equatable, CustomStringConvertible {
    public var field: String
    public var reason: String

    public init(field: String, reason: String) {
        self.field = field
        self.reason = reason
    }

    public var description: String { field.isEmpty ? reason : "\(field): \(reason)" }
}
