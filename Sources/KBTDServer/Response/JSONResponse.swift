import Hummingbird
import KBTDCore
import NIOCore

/// Building JSON responses: every body kbtd sends is JSON.
enum JSONResponse {
    static func make(_ status: HTTPResponse.Status, _ body: JSONOutput, headers extra: HTTPFields = [:]) -> Response {
        bytes(status, Array(body.serialized().utf8), headers: extra)
    }

    static func bytes(_ status: HTTPResponse.Status, _ body: [UInt8], headers extra: HTTPFields = [:]) -> Response {
        var headers: HTTPFields = [.contentType: "application/json"]
        headers.append(contentsOf: extra)
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// `{"error": ..., "detail": ...}` with an optional `field`.
    static func error(_ status: HTTPResponse.Status, _ error: String, detail: String, field: String? = nil,
                      retryAfter: Int? = nil, headers extra: HTTPFields = [:]) -> Response {
        var members: [(String, JSONOutput)] = [("error", .string(error)), ("detail", .string(detail))]
        if let field, !field.isEmpty { members.append(("field", .string(field))) }
        var headers = extra
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        return make(status, .object(members), headers: headers)
    }
}
