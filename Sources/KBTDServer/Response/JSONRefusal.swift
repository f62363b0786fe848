import Hummingbird
import KBTDCore

/// A refusal a handler throws rather than builds: it renders itself as kbtd's
/// JSON error body (`{"error", "detail", "field"}`, `JSONResponse.error`) when
/// `JSONErrorMiddleware` catches it, so every route's 400, 413, 415 and 503 is
/// the same bytes however it was raised (Hummingbird's `HTTPResponseError`).
///
///     throw JSONRefusal(fieldError, "invalid query")
struct JSONRefusal: HTTPResponseError {
    var status: HTTPResponse.Status
    /// The short title (`error` in the body).
    var error: String
    var detail: String
    /// The field, header or query parameter at fault (`field` in the body), if any.
    var field: String?
    /// Seconds for `Retry-After` (503s).
    var retryAfter: Int?

    init(status: HTTPResponse.Status, error: String, detail: String, field: String? = nil, retryAfter: Int? = nil) {
        self.status = status
        self.error = error
        self.detail = detail
        self.field = field
        self.retryAfter = retryAfter
    }

    /// A 400 for a value that breaks a rule: the same `detail` and `field` on every route.
    init(_ fault: FieldError, _ title: String) {
        self.init(status: .badRequest, error: title, detail: fault.description, field: fault.field)
    }

    /// The refusal as every path sends it.
    var answer: JSONAnswer {
        JSONAnswer.error(status, error, detail: detail, field: field, retryAfter: retryAfter)
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        answer.response
    }
}
