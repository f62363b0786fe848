import Foundation
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
}
