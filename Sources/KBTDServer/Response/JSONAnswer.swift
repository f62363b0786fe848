import Hummingbird
import KBTDCore
import NIOCore
import NIOHPACK

/// One JSON answer framed once: the status, the header fields in the order they are sent
/// (`Content-Type`, the extra fields, `Content-Length`) and the body. The router sends it as a
/// `Response` (`response`); the h2 batch path (`HTTP2FrameFront`) writes it as h2 frames with
/// `Date` (`h2Head(date:)`), so every path sends the same answer.
struct JSONAnswer: Sendable {
    var status: HTTPResponse.Status
    var fields: HTTPFields
    var body: ByteBuffer

    init(_ status: HTTPResponse.Status, _ body: [UInt8], headers extra: HTTPFields = [:]) {
        self.status = status
        var fields: HTTPFields = [.contentType: "application/json"]
        fields.append(contentsOf: extra)
        // Where Hummingbird's `Response` puts it for a body of known length.
        fields[.contentLength] = String(body.count)
        self.fields = fields
        self.body = ByteBuffer(bytes: body)
    }

    /// The router's `Response` (its `Content-Length` already set, so `Response` adds none).
    var response: Response {
        Response(status: status, headers: fields, body: .init(byteBuffer: body))
    }

    /// The response head as the router's responder sends it, with `Date` last.
    func head(date: String) -> HTTPResponse {
        var fields = self.fields
        fields[.date] = date
        return HTTPResponse(status: status, headerFields: fields)
    }

    /// The same head as an h2 HEADERS frame carries it (`HTTP2FrameFront`), framed as `RenderedAnswer.h2Head` is.
    func h2Head(date: String) -> HPACKHeaders {
        HPACKHeaders(status: status, fields: head(date: date).headerFields)
    }

    /// `{"error": ..., "detail": ...}` with an optional `field`.
    static func error(_ status: HTTPResponse.Status, _ error: String, detail: String, field: String? = nil,
                      retryAfter: Int? = nil, headers extra: HTTPFields = [:]) -> JSONAnswer {
        var members: [(String, JSONOutput)] = [("error", .string(error)), ("detail", .string(detail))]
        if let field, !field.isEmpty { members.append(("field", .string(field))) }
        var headers = extra
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        return JSONAnswer(status, Array(JSONOutput.object(members).serialized().utf8), headers: headers)
    }
}
