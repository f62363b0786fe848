import Foundation
import KBTDCore
import Testing

/// A point release answers on its own only with `min_sources` networks of its own, through
/// the whole path: ingest attributes each batch to its network and release, the commit stores
/// each (key, release, network) once and hands the index only the new ones, and a restart
/// rebuilds the same support from `release_sources`.
@Suite("Release sources through the routes", .ownThreads, .timeLimit(.minutes(10)))
struct ReleaseSourceRouteTests {
    static let models = Array(ReleaseFleet.models.prefix(4))
    static let bogus = models[3]

    static func post(_ app: InProcessApp, from source: String, model: String, os: String, height: Double, count: Int) async throws {
        let response = try await app.post(gzip(batchBody(model: model, os: os, samples: shows(count, height: height, language: "ja-JP"))),
                                          encoding: "gzip", from: source)
        #expect(response.status == 202, "\(response.text)")
    }

    static func height(_ app: InProcessApp, _ model: String, _ os: String) async throws -> Double? {
        try await app.get("/v1/height?model=\(model)&language=ja-JP&os=\(os)").json?["height"]?.double
    }

    @Test func oneNetworkCannotMoveAReleasesAnswerOnAKeyOthersConfirmed() async throws {
        let database = TestPaths.temporaryDirectory().appendingPathComponent("kbtd.sqlite").path
        defer { try? FileManager.default.removeItem(atPath: (database as NSString).deletingLastPathComponent) }
        let environment = ["KBTD_TRUSTED_PEERS": "unix"]
        do {
            let app = try InProcessApp(environment: environment, database: database)
            for model in Self.models {
                let old = ReleaseFleet.base(model) + ReleaseFleet.candidateBar
                // The key's history from the trusted socket: the key has its support.
                try await Self.post(app, from: "unix", model: model, os: "26.1", height: old, count: 150)
                if model == Self.bogus {
                    // One network, again and again: still one source of 26.2.
                    for _ in 0..<4 { try await Self.post(app, from: "10.9.0.1", model: model, os: "26.2", height: old + 4, count: 20) }
                } else {
                    for network in 1...3 { try await Self.post(app, from: "10.\(network).0.1", model: model, os: "26.2", height: old + 4, count: 20) }
                }
            }
            for model in Self.models {
                let old = ReleaseFleet.base(model) + ReleaseFleet.candidateBar
                let expected = model == Self.bogus ? old : old + 4
                #expect(try await Self.height(app, model, "26.2") == expected, "\(model) on 26.2")
                #expect(try await Self.height(app, model, "26.1") == old, "\(model) on 26.1")
            }
            await app.app.shutdown()
        }
        // After a restart the index has the same support from the store.
        do {
            let app = try await InProcessApp.reopened(environment: environment, database: database)
            let old = ReleaseFleet.base(Self.bogus) + ReleaseFleet.candidateBar
            #expect(try await Self.height(app, Self.bogus, "26.2") == old)
            #expect(try await Self.height(app, Self.models[0], "26.2") == ReleaseFleet.base(Self.models[0]) + ReleaseFleet.candidateBar + 4)
            // Two more networks report the bogus model's 26.2: now three of its own, and it answers.
            for network in 5...6 { try await Self.post(app, from: "10.\(network).0.1", model: Self.bogus, os: "26.2", height: old + 4, count: 20) }
            #expect(try await Self.height(app, Self.bogus, "26.2") == old + 4)
            await app.app.shutdown()
        }
    }
}
