import Foundation
import KBTDServer
import Testing

/// `KBTDApp.reload(_:)`, what SIGHUP calls (SystemdTests checks the signal itself on the binary).
@Suite("Reload, in-process")
struct AppReloadTests {
    @Test func reloadableSettingsApplyAtOnceAndAddressesStay() async throws {
        let daemon = try InProcessApp()
        let path = "/v1/height?model=iPhone17,1&language=en-US&os=26.1"
        #expect(try await daemon.post(gzip(batchBody(samples: shows(25, height: 336))), encoding: "gzip").status == 202)
        #expect(try await daemon.get(path).json?["basis"] == .string("model+os+language"))

        var next = daemon.app.settings.current
        next.estimator.minSamples = 30
        next.ingestTokens = ["secret"]
        next.cacheMaxAge = 60
        next.database = daemon.directory.appendingPathComponent("elsewhere.sqlite").path
        daemon.app.reload(next)

        let answer = try await daemon.get(path)
        #expect(answer.json?["basis"] == .string("default"), "25 samples no longer reach min_samples 30")
        #expect(answer.header("cache-control") == "public, max-age=60")
        #expect(try await daemon.post(gzip(batchBody(samples: shows(1, height: 336))), encoding: "gzip").status == 401)
        #expect(try await daemon.post(gzip(batchBody(samples: shows(1, height: 336))), encoding: "gzip",
                                      headers: [("Authorization", "Bearer secret")]).status == 202)
        #expect(daemon.app.settings.current.database == daemon.database, "the database needs a restart")
    }
}
