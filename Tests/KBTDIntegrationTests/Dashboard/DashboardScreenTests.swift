import Foundation
import KBTDCore
import KBTDReport
import Testing

/// The dashboard's screen table: a model's screens (Display Zoom shows as a second, smaller one),
/// the batches that reported each, and the answers that differ on it from the model's usual ones.
@Suite("Dashboard screens of a model", .ownThreads, .timeLimit(.minutes(10)))
struct DashboardScreenTests {
    @Test func thePageListsEachScreenAndTheAnswersThatDifferOnIt() throws {
        var counts = AggregateDelta()
        var index = HeightIndex()
        for model in ZoomFleet.models {
            for os in ZoomFleet.oses {
                for (screen, height, count) in [(ZoomFleet.standard, ZoomFleet.base(model), 1_500),
                                                 (ZoomFleet.zoomed, ZoomFleet.base(model) - ZoomFleet.difference, 300)] {
                    let batch = ZoomFleet.batch(model: model, os: os, screen: screen, height: height, count: count)
                    counts.merge(batch)
                    index.apply(batch)
                }
            }
        }
        let estimator = HeightEstimator()
        let model = ZoomFleet.models[0]
        let html = DashboardPage.render(DashboardInput(
            counts: counts, hourly: [], answersByBasis: nil, filter: DashboardFilter(model: model, osMajor: 26), minSamples: 20,
            generatedAt: 1_763_720_000, live: false, estimate: { estimator.estimate($0, in: index) },
            screens: { ScreenReports.of($0, in: index) }))
        let rows = htmlTags(html, "<tr class=\"screen\"")
        // Most reports first, then the smaller screen: one batch per OS major on each screen.
        #expect(rows.map { $0["data-screen"] } == ["320x693", "390x844"], "\(rows)")
        #expect(rows.map { $0["data-reports"] } == ["2", "2"])
        #expect(rows.map { $0["data-differing"] } == ["1", "0"])
        let answer = try #require(htmlTags(html, "<span class=\"screen-answer\"").first)
        #expect(answer["data-language"] == "en-US" && answer["data-orientation"] == "portrait")
        #expect(answer["data-height"] == "\(ZoomFleet.base(model) - ZoomFleet.difference)" && answer["data-usual"] == "\(ZoomFleet.base(model))")
        #expect(answer["data-basis"] == EstimateBasis.modelOSLanguage.rawValue)

        // Without screens (a caller that passes none): the section says so.
        let none = DashboardPage.render(DashboardInput(
            counts: counts, hourly: [], answersByBasis: nil, filter: DashboardFilter(model: model), minSamples: 20,
            generatedAt: 1_763_720_000, live: false, estimate: { estimator.estimate($0, in: index) }))
        #expect(htmlTags(none, "<tr class=\"screen\"").isEmpty && none.contains("No phone of this model reported its screen."))
    }

    /// What headless Chromium draws from a live daemon: the zoomed screen, its reports, and the
    /// height `/v1/height` serves with that screen.
    @Test(.enabled(if: DashboardBrowserTests.chromium != nil,
                   "Chromium is not installed: `apt-get install chromium` (scripts/dev deps and .ci/run install it)"))
    func chromiumShowsTheZoomedScreenAndItsHeight() async throws {
        let daemon = try TestDaemon().start()
        for body in ZoomFleet.bodies() {
            let response = try daemon.post(gzip(body), encoding: "gzip")
            #expect(response.status == 202, "\(response.text)")
        }
        let model = ZoomFleet.models[1]
        let profile = daemon.directory.appendingPathComponent("chromium")
        let dom = try await DashboardBrowserTests.browser(profile, ["--dump-dom", "http://127.0.0.1:\(daemon.port)/dashboard?model=\(model)&os=26"])
        #expect(dom.status == 0, "\(dom.stderr.suffix(2000))")
        #expect(!dom.stderr.contains("Content Security Policy"), "CSP violation: \(dom.stderr.suffix(2000))")
        let rows = htmlTags(dom.stdout, "<tr class=\"screen\"")
        #expect(Set(rows.compactMap { $0["data-screen"] }) == ["390x844", "320x693"], "\(rows)")
        let zoomed = try #require(rows.first { $0["data-screen"] == "320x693" })
        #expect(zoomed["data-reports"] == "2" && zoomed["data-differing"] == "1", "\(zoomed)")
        let answer = try #require(htmlTags(dom.stdout, "<span class=\"screen-answer\"").first)
        let served = try daemon.get("/v1/height?model=\(model)&language=en-US&os=26&screen=320x693")
        #expect(served.json?["height"]?.double == ZoomFleet.base(model) - ZoomFleet.difference)
        #expect(answer["data-height"] == served.json?["height"]?.double.map { "\($0)" } && answer["data-usual"] == "\(ZoomFleet.base(model))")
    }
}
