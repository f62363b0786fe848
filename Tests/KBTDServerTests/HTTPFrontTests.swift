import Foundation
import HTTPTypes
@testable import KBTDServer
import Testing

/// The HTTP front built with the app: the router and the h2 frames' fast path for height answers
/// send one rendered answer from one cache.
@Suite("The HTTP front built with the app")
struct HTTPFrontTests {
    static let path = "/v1/height?model=iPhone17,1&language=en-US&os=26.1"

    /// Header fields without `Date` (the second it was sent), names lowercased, in order.
    static func fields(_ headers: [(String, String)]) -> [String] {
        headers.filter { $0.0.lowercased() != "date" }.map { "\($0.0.lowercased()): \($0.1)" }
    }

    /// A question the router answered is kept for the fast path, and one the fast path answered is
    /// kept for the router: one cache, one framing (the same `ETag` and `Content-Length` either way).
    @Test func theRouterAndTheFastPathShareOneRenderedAnswer() async throws {
        let app = try InProcessApp()
        let answers = app.app.front
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

    /// `100 Continue` goes out before the router reads a body only for a batch whose headers pass the
    /// route's token and framing checks; anything else gets the router's answer alone.
    @Test func continueOnlyForABatchWhoseHeadersPass() throws {
        let app = try InProcessApp(environment: ["KBTD_INGEST_TOKENS": "secret"])
        func head(_ fields: [(HTTPField.Name, String)], method: HTTPRequest.Method = .post, path: String = "/v1/batches") -> HTTPRequest {
            var headers = HTTPFields()
            for (name, value) in fields { headers.append(HTTPField(name: name, value: value)) }
            return HTTPRequest(method: method, scheme: "http", authority: "kbtd.test", path: path, headerFields: headers)
        }
        let good: [(HTTPField.Name, String)] = [(.contentType, "application/json"), (.contentLength, "100"),
                                                (.authorization, "Bearer secret"), (.expect, "100-continue")]
        #expect(app.app.front.continues(head(good)))
        #expect(app.app.front.continues(head(good, path: "/v1/batches?x=1")), "the route's path, whatever the query")
        #expect(!app.app.front.continues(head(good.filter { $0.0 != .expect })), "no Expect: no 100")
        #expect(!app.app.front.continues(head(good.filter { $0.0 != .authorization })), "401 comes alone")
        #expect(!app.app.front.continues(head(good.map { $0.0 == .contentType ? ($0.0, "text/plain") : $0 })), "415 comes alone")
        #expect(!app.app.front.continues(head(good.map { $0.0 == .contentLength ? ($0.0, "999999999") : $0 })), "413 comes alone")
        #expect(!app.app.front.continues(head(good, method: .get, path: "/v1/height")), "only the batch route")
    }
}
