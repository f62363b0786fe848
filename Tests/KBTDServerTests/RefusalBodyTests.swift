import Foundation
import KBTDCore
import Testing

/// Refusals are errors that render themselves (`JSONRefusal` through
/// `JSONErrorMiddleware`): each answer is pinned here byte for byte, status,
/// content type and body, as the handlers built them by hand before.
@Suite("Refusal bodies: byte for byte")
struct RefusalBodyTests {
    static let json = [("Content-Type", "application/json")]

    func expectRefusal(_ response: HTTPTestResponse, _ status: Int, _ body: String,
                       sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(response.status == status, sourceLocation: sourceLocation)
        #expect(response.header("Content-Type") == "application/json", sourceLocation: sourceLocation)
        #expect(response.text == body, sourceLocation: sourceLocation)
    }

    @Test func bodyRefusalsBeforeValidation() async throws {
        let app = try InProcessApp(environment: ["KBTD_MAX_COMPRESSED_BYTES": "4096"])
        expectRefusal(try await app.request(.post, "/v1/batches", headers: [("Content-Type", "text/plain")], body: Array("{}".utf8)),
                      415, #"{"error":"unsupported content type","detail":"Content-Type must be application/json, got text/plain","field":"Content-Type"}"#)
        expectRefusal(try await app.request(.post, "/v1/batches", headers: Self.json + [("Content-Encoding", "br")], body: [1]),
                      415, #"{"error":"unsupported content encoding","detail":"Content-Encoding must be gzip, deflate or none, got br","field":"Content-Encoding"}"#)
        expectRefusal(try await app.request(.post, "/v1/batches", headers: Self.json, body: [UInt8](repeating: 32, count: 5000)),
                      413, #"{"error":"body too large","detail":"body is 5000 bytes; the limit is 4096 bytes on the wire"}"#)
        let bad = try await app.request(.post, "/v1/batches", headers: Self.json + [("Content-Encoding", "gzip")], body: Array("not gzip".utf8))
        #expect(bad.status == 400)
        #expect(bad.text.hasPrefix(#"{"error":"bad compressed stream","detail":""#) && bad.text.hasSuffix(#""}"#))
    }

    @Test func anInvalidBatchNamesItsField() async throws {
        let app = try InProcessApp()
        let body = batchBody(model: "", samples: shows(1, height: 336))
        var fault: FieldError?
        do { _ = try BatchIntake.validate(json: body, now: Date().timeIntervalSince1970, rules: FieldRules(maxSamples: 500)) } catch { fault = error }
        let error = try #require(fault)
        #expect(error.field == "device.model")
        expectRefusal(try await app.request(.post, "/v1/batches", headers: Self.json, body: body), 400,
                      #"{"error":"invalid batch","detail":"\#(error.description)","field":"device.model"}"#)
    }

    /// The height routes' 400 is a thrown refusal too: the same bytes as every other route's,
    /// through the router (the fast path never answers a question the reply refuses).
    @Test func invalidHeightQueriesNameTheirField() async throws {
        let app = try InProcessApp()
        func fault(_ parse: () throws(FieldError) -> Void) -> FieldError? {
            do { try parse() } catch { return error }
            return nil
        }
        let orientation = try #require(fault { () throws(FieldError) in
            _ = try HeightQuery(parameters: { ["model": "iPhone17,1", "language": "ja-JP", "orientation": "sideways"][$0] })
        })
        #expect(orientation.field == "orientation")
        expectRefusal(try await app.get("/v1/height?model=iPhone17,1&language=ja-JP&orientation=sideways"), 400,
                      #"{"error":"invalid query","detail":"\#(orientation.description)","field":"orientation"}"#)
        let os = try #require(fault { () throws(FieldError) in _ = try HeightQuery.osMajor("x") })
        #expect(os.field == "os")
        expectRefusal(try await app.get("/v1/heights?model=iPhone17,1&os=x"), 400,
                      #"{"error":"invalid query","detail":"\#(os.description)","field":"os"}"#)
        let missing = try await app.get("/v1/height")
        #expect(missing.status == 400 && missing.header("Content-Type") == "application/json")
        #expect(missing.text.hasPrefix(#"{"error":"invalid query","detail":""#) && missing.text.hasSuffix(#""field":"model"}"#))
        let head = try await app.request(.head, "/v1/height?model=iPhone17,1&language=ja-JP&orientation=sideways")
        #expect(head.status == 400 && head.body.isEmpty && head.header("Content-Type") == "application/json")
    }

    @Test func invalidQueriesOnTheOperationsEndpoints() async throws {
        let app = try InProcessApp()
        expectRefusal(try await app.get("/v1/stats?limit=0"), 400,
                      #"{"error":"invalid query","detail":"limit: must be an integer in 1...10000","field":"limit"}"#)
        let dashboard = try await app.get("/dashboard?os=x")
        #expect(dashboard.status == 400)
        #expect(dashboard.text.hasPrefix(#"{"error":"invalid query","detail":"os: "#) && dashboard.text.hasSuffix(#","field":"os"}"#))
        // HEAD: the same status and headers, no body.
        let head = try await app.request(.head, "/v1/stats?limit=0")
        #expect(head.status == 400 && head.body.isEmpty && head.header("Content-Type") == "application/json")
    }
}
