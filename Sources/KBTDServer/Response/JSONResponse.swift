import Hummingbird
import KBTDCore

/// Building JSON responses: every body kbtd sends is JSON.
enum JSONResponse {
    static func make(_ status: HTTPResponse.Status, _ body: JSONOutput, headers extra: HTTPFields = [:]) -> Response {
        bytes(status, Array(body.serialized().utf8), headers: extra)
    }

    static func bytes(_ status: HTTPResponse.Status, _ body: [UInt8], headers extra: HTTPFields = [:]) -> Response {
        JSONAnswer(status, body, headers: extra).response
    }

    /// `{"error": ..., "detail": ...}` with an optional `field`.
    static func error(_ status: HTTPResponse.Status, _ error: String, detail: String, field: String? = nil,
                      retryAfter: Int? = nil, headers extra: HTTPFields = [:]) -> Response {
        JSONAnswer.error(status, error, detail: detail, field: field, retryAfter: retryAfter, headers: extra).response
    }
}
