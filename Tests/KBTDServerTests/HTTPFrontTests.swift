import Foundation
import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
@testable import KBTDServer
import Testing

/// The HTTP front built with the app: the fast path for height answers is part of `KBTDApp`, so an
/// in-process app reaches it, and the router, the HTTP/1.1 bytes path and h2 streams send one
/// rendered answer from one cache.
@Suite("The HTTP front built with the app")
struct HTTPFrontTests {
    static let path = "/v1/height?model=iPhone17,1&language=en-US&os=26.1"

    /// Header fields without `Date` (the second it was sent), names lowercased, in order.
    static func fields(_ headers: [(String, String)]) -> [String] {
        headers.filter { $0.0.lowercased() != "date" }.map { "\($0.0.lowercased()): \($0.1)" }
    }

    @Test func theInProcessAppAnswersHeightsOnItsFastPath() async throws {
        let app = try InProcessApp()
        let batch = try await app.post(gzip(batchBody(samples: shows(25, height: 336))), encoding: "gzip", from: "unix")
        #expect(batch.status == 202, "\(batch.text)")
        let routed = try await app.get(Self.path)
        #expect(routed.status == 200)
        #expect(app.app.answers.renderedBytes > 0, "the router's answer is kept in the one rendered-answer cache")

        // HTTP/1.1: the app's bytes handler answers a plain GET with the router's bytes.
        let connection = EmbeddedChannel(handler: CachedAnswerBytesHandler(app.app.answers))
        defer { _ = try? connection.finish() }
        try connection.writeInbound(ByteBuffer(string: "GET \(Self.path) HTTP/1.1\r\nHost: kbtd.test\r\n\r\n"))
        #expect(try connection.readInbound(as: ByteBuffer.self) == nil, "nothing went on to the decoder and the router")
        var written = ""
        while let buffer = try connection.readOutbound(as: ByteBuffer.self) { written += String(buffer: buffer) }
        let parts = written.components(separatedBy: "\r\n\r\n")
        #expect(parts.count == 2)
        var lines = parts[0].components(separatedBy: "\r\n")
        #expect(lines.removeFirst() == "HTTP/1.1 200 OK")
        let headers = lines.compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
        }
        #expect(headers.contains { $0.0 == "Date" })
        #expect(Self.fields(headers) == Self.fields(routed.headers), "the same fields, in the same order, as the router's")
        #expect(Array(parts[1].utf8) == routed.body)

        // An h2 stream: the handlers the app gives every stream answer at the level of HTTP parts.
        let stream = EmbeddedChannel()
        defer { _ = try? stream.finish() }
        try stream.pipeline.syncOperations.addHandlers(app.app.requestHandlers(
            .h2, limits: app.app.settings.current.limits,
            batches: BatchPath(app: app.app, clients: ClientAddressResolver(app.app.settings.current))))
        try stream.writeInbound(HTTPRequestPart.head(HTTPRequest(method: .get, scheme: "https", authority: "kbtd.test",
                                                                 path: Self.path)))
        try stream.writeInbound(HTTPRequestPart.end(nil))
        #expect(try stream.readInbound(as: HTTPRequestPart.self) == nil, "the stream's request did not reach the router")
        guard case .head(let head)? = try stream.readOutbound(as: HTTPResponsePart.self),
              case .body(let body)? = try stream.readOutbound(as: HTTPResponsePart.self),
              case .end? = try stream.readOutbound(as: HTTPResponsePart.self) else {
            Issue.record("no head, body and end on the stream")
            return
        }
        #expect(head.status.code == 200)
        #expect(Self.fields(head.headerFields.map { ($0.name.rawName, $0.value) }) == Self.fields(routed.headers))
        #expect(Array(body.readableBytesView) == routed.body)

        #expect(try await app.metric("kbtd_fast_answers_total{protocol=\"http/1.1\"}") == 1)
        #expect(try await app.metric("kbtd_fast_answers_total{protocol=\"h2\"}") == 1)
        #expect(try await app.metric("kbtd_http_requests_total{route=\"/v1/height\",status=\"200\"}") == 3,
                "the router's answer and both fast answers")
    }

    /// A question the router answered is kept for the fast path, and one the fast path answered is
    /// kept for the router: one cache, one framing (the same `ETag` and `Content-Length` either way).
    @Test func theRouterAndTheFastPathShareOneRenderedAnswer() async throws {
        let app = try InProcessApp()
        let answers = app.app.answers
        let heights = "/v1/heights?model=iPhone17,1&os=26.1"
        let fast = try #require(answers.answer(target: heights, ifNoneMatch: nil))
        let kept = answers.renderedBytes
        let routed = try await app.get(heights)
        #expect(answers.renderedBytes == kept, "the router found the fast path's answer and stored nothing new")
        #expect(routed.header("etag") == fast.fields[.eTag])
        #expect(routed.header("content-length") == fast.fields[.contentLength])
        // 304: the router's revalidation is kept too, then found by the fast path.
        let etag = try #require(fast.fields[.eTag])
        #expect(try await app.get(heights, headers: [("If-None-Match", etag)]).status == 304)
        let grown = answers.renderedBytes
        #expect(grown > kept)
        let notModified = try #require(answers.answer(target: heights, ifNoneMatch: etag))
        #expect(notModified.reply.status == .notModified && notModified.body == nil)
        #expect(answers.renderedBytes == grown)
    }
}
