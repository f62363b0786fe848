/// Why a document is not JSON, with the byte offset where reading stopped
/// (the intake's and the reference parser's syntax errors alike).
public struct JSONSyntaxError: Error, Equatable, Sendable, CustomStringConvertible {
    public var reason: String
    public var offset: Int
    public var description: String { "\(reason) at byte \(offset)" }

    public init(reason: String, offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    /// Nesting deeper than this is rejected (a batch needs 3 levels).
    public static let maxDepth = 32
}
