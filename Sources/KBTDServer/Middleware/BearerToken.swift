import Hummingbird

/// `Authorization: Bearer TOKEN` checks shared by the ingest and admin middlewares.
enum BearerToken {
    /// Whether `Authorization: Bearer X` carries one of `tokens` (the scheme is
    /// case-insensitive, RFC 7235). Every token is compared in constant time.
    static func matches(_ request: Request, anyOf tokens: [String]) -> Bool {
        matches(request.headers, anyOf: tokens)
    }

    /// The same check on a request's header fields (the batch path has no `Request`).
    static func matches(_ headers: HTTPFields, anyOf tokens: [String]) -> Bool {
        guard let header = headers[.authorization], header.count > 7,
              header.prefix(7).lowercased() == "bearer " else { return false }
        let presented = Array(header.utf8.dropFirst(7))
        var match = false
        for token in tokens where constantTimeEqual(presented, Array(token.utf8)) { match = true }
        return match
    }

    /// Compares secrets without an early exit, so timing does not leak a prefix.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for i in 0..<max(a.count, b.count) {
            difference |= (i < a.count ? a[i] : 0) ^ (i < b.count ? b[i] : 0)
        }
        return difference == 0
    }
}
