import Foundation
import Testing

/// Who may ask what, answered in-process from a remote client address and from loopback.
@Suite("Access rules and ingest outcomes, in-process")
struct AccessTests {
    static let remote = "203.0.113.7"

    @Test func operationsEndpointsAnswerRemotePeersOnlyWithTheAdminToken() async throws {
        let app = try InProcessApp(environment: ["KBTD_ADMIN_TOKEN": "admin-secret"])
        for path in ["/metrics", "/v1/stats", "/dashboard"] {
            let denied = try await app.get(path, from: Self.remote)
            #expect(denied.status == 403, "\(path)")
            #expect(denied.json?["error"] == .string("forbidden"), "\(path)")
            #expect(denied.json?["detail"]?.string?.contains("admin token") == true, "\(path)")
            let wrong = try await app.get(path, headers: [("Authorization", "Bearer admin-secre")], from: Self.remote)
            #expect(wrong.status == 403, "\(path)")
            let allowed = try await app.get(path, headers: [("Authorization", "bearer admin-secret")], from: Self.remote)
            #expect(allowed.status == 200, "\(path): \(allowed.text.prefix(200))")
            #expect(try await app.get(path).status == 200, "\(path) from loopback")
            #expect(try await app.get(path, from: "unix").status == 200, "\(path) from the Unix socket")
        }
        // Phones' endpoints answer anyone.
        #expect(try await app.get("/healthz", from: Self.remote).status == 200)
        #expect(try await app.get("/v1/height?model=iPhone17,1&language=en-US", from: Self.remote).status == 200)
    }

    @Test func everyIngestOutcomeIsCountedUnderItsLabel() async throws {
        let app = try InProcessApp(environment: [
            "KBTD_INGEST_TOKENS": "phone-secret", "KBTD_RATE_LIMIT_PER_SECOND": "0.001", "KBTD_RATE_LIMIT_BURST": "3",
        ])
        let body = gzip(batchBody(samples: shows(2, height: 336)))
        let token = [("Authorization", "Bearer phone-secret")]
        #expect(try await app.post(body, encoding: "gzip", from: Self.remote).status == 401)
        #expect(try await app.post(body, encoding: "gzip", headers: token, from: Self.remote).status == 202)
        #expect(try await app.post(body, encoding: "gzip", headers: token, from: Self.remote).status == 200)
        #expect(try await app.post(body, encoding: "br", headers: token, from: Self.remote).status == 429, "the bucket (3) is empty")
        #expect(try await app.post(body, encoding: "br", headers: token).status == 415, "loopback is not rate limited")
        for (outcome, count) in [("unauthorized", 1.0), ("stored", 1), ("duplicate", 1), ("rate_limited", 1), ("rejected", 1)] {
            #expect(try await app.metric("kbtd_batches_total{outcome=\"\(outcome)\"}") == count, "\(outcome)")
        }
        #expect(try await app.metric("kbtd_http_requests_total{route=\"/v1/batches\",status=\"429\"}") == 1)
    }
}
