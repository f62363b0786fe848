import Foundation
import KBTDCore
import Testing

/// Display Zoom through the HTTP API: the scenario a new user tries first.
@Suite("A zoomed phone asks with its screen and gets its own height")
struct ScreenVariantRouteTests {
    /// Loopback is a stranger: each device posts from a network (and /16) of its own.
    static let strangers = ["KBTD_TRUSTED_PEERS": "unix"]

    static func post(_ app: InProcessApp, device: Int, screen: String, height: Double) async throws {
        let body = gzip(batchBody(model: "iPhone14,5", os: "26.1", screen: screen, samples: shows(5, height: height)))
        let response = try await app.request(.post, "/v1/batches", headers: [("Content-Type", "application/json"),
                                                                             ("Content-Encoding", "gzip")],
                                             body: body, from: "10.\(device).0.1")
        #expect(response.status == 202, "\(response.text)")
    }

    static func height(_ app: InProcessApp, screen: String?) async throws -> (Double?, String?) {
        var path = "/v1/height?model=iPhone14,5&os=26.1&language=en-US"
        if let screen { path += "&screen=\(screen)" }
        let answer = try await app.get(path)
        #expect(answer.status == 200)
        return (answer.json?["height"]?.double, answer.json?["basis"]?.string)
    }

    @Test func thirtyStandardAndSixZoomedPhonesEachGetTheirOwnHeightBeforeAndAfterARestart() async throws {
        let database = TestPaths.temporaryDirectory().appendingPathComponent("kbtd.sqlite").path
        do {
            let app = try InProcessApp(environment: Self.strangers, database: database)
            for device in 0..<30 { try await Self.post(app, device: device, screen: "390x844", height: 336) }
            for device in 30..<36 { try await Self.post(app, device: device, screen: "320x693", height: 319) }
            #expect(try await Self.height(app, screen: "320x693") == (319, "model+os+language"))
            #expect(try await Self.height(app, screen: "390x844") == (336, "model+os+language"))
            #expect(try await Self.height(app, screen: nil) == (336, "model+os+language"))
            // What the app fetches at launch, with its own screen.
            for (screen, height) in [("320x693", 319.0), ("390x844", 336.0)] {
                let all = try await app.get("/v1/heights?model=iPhone14,5&os=26.1&screen=\(screen)")
                guard case .array(let estimates)? = all.json?["estimates"] else {
                    Issue.record("no estimates: \(all.text)")
                    continue
                }
                #expect(estimates.count == 1)
                #expect(estimates.first?["height"]?.double == height, "\(screen): \(all.text)")
            }
            await app.app.shutdown()
        }
        let reopened = try await InProcessApp.reopened(environment: Self.strangers, database: database)
        #expect(try await Self.height(reopened, screen: "320x693") == (319, "model+os+language"))
        #expect(try await Self.height(reopened, screen: "390x844") == (336, "model+os+language"))
        #expect(try await Self.height(reopened, screen: nil) == (336, "model+os+language"))
    }

    @Test func twoZoomedNetworksAreNotEnoughToMoveTheirScreensAnswer() async throws {
        let app = try InProcessApp(environment: Self.strangers)
        for device in 0..<30 { try await Self.post(app, device: device, screen: "390x844", height: 336) }
        for device in 30..<32 {
            for _ in 0..<5 { try await Self.post(app, device: device, screen: "320x693", height: 319) }
        }
        #expect(try await Self.height(app, screen: "320x693") == (336, "model+os+language"))
    }
}
