import Foundation
import KBTDCore
import KBTDReport
import Testing

/// The page builder alone: counts in, HTML out, no daemon.
@Suite("Dashboard page (pure rendering)", .ownThreads, .timeLimit(.minutes(10)))
struct DashboardPageTests {
    static let series = SeriesKey(model: "iPhone17,1", osMajor: 26, language: "ja-JP", orientation: .portrait, keyboardType: "default")

    static func counts() -> AggregateDelta {
        var counts = AggregateDelta()
        for (height, n) in [(346.0, 30), (302.0, 5), (346.5, 2)] {
            counts.heights[HeightCountKey(series: series, placement: .docked, halfPoints: HeightBin.halfPoints(height))] = Int64(n)
        }
        // A floating frame never shows in the docked histogram.
        counts.heights[HeightCountKey(series: series, placement: .floating, halfPoints: HeightBin.halfPoints(120))] = 4
        counts.animations[AnimationCountKey(series: series, event: .show, bin: AnimationBin(durationMs: 250, curve: 7))] = 37
        counts.coldStarts[ColdStartCountKey(series: series, preloaded: false, bucket: LogBucket.index(600))] = 10
        counts.coldStarts[ColdStartCountKey(series: series, preloaded: true, bucket: LogBucket.index(40))] = 10
        return counts
    }

    static func input(filter: DashboardFilter = DashboardFilter(), live: Bool = true) -> DashboardInput {
        let counts = counts()
        var index = HeightIndex()
        index.apply(counts)
        let estimator = HeightEstimator()
        return DashboardInput(counts: counts, hourly: [HourlyIngest(hour: 1_763_719_200, batches: 3, samples: 37, rejected: 1)],
                              answersByBasis: BasisCounts(counts: [.modelOSLanguage: 3, .default: 1], since: 1_763_700_000),
                              filter: filter, minSamples: 20, generatedAt: 1_763_720_000, live: live,
                              estimate: { estimator.estimate($0, in: index) })
    }

    @Test func drawsOneBarPerDockedBinAndMarksTheEstimate() {
        let html = DashboardPage.render(Self.input())
        let bars = htmlTags(html, "<rect class=\"bar\"")
        #expect(bars.map { $0["data-bin"] } == ["302.0", "346.0", "346.5"])
        #expect(bars.map { $0["data-count"] } == ["5", "30", "2"])
        let estimate = htmlTags(html, "<g class=\"estimate\"").first
        // The estimator's own answer for the key (the defaults need 3 sources; one trusted source suffices).
        let expected = HeightEstimator().estimate(HeightQuery(model: "iPhone17,1", language: "ja-JP"), in: {
            var index = HeightIndex()
            index.apply(Self.counts())
            return index
        }())
        #expect(estimate?["data-height"] == "\(expected.height)" && estimate?["data-basis"] == expected.basis.rawValue)
    }

    /// One key, every cold start in one bucket (a first day): the axis still spans a decade with
    /// ticks, the bar is narrow, p50 and p95 share one label, and the missing table says why.
    @Test func oneKeysColdStartsReadAsAChart() {
        var counts = Self.counts()
        counts.coldStarts = [ColdStartCountKey(series: Self.series, preloaded: false, bucket: LogBucket.index(412)): 21]
        var index = HeightIndex()
        index.apply(counts)
        let estimator = HeightEstimator()
        let html = DashboardPage.render(DashboardInput(
            counts: counts, hourly: [], answersByBasis: BasisCounts(counts: [:], since: 1_763_700_000), filter: DashboardFilter(),
            minSamples: 20, generatedAt: 1_763_720_000, live: true, estimate: { estimator.estimate($0, in: index) }))
        let start = html.range(of: "<svg class=\"coldstart\" data-kind=\"cold\"")!.lowerBound
        let chart = String(html[start..<html[start...].range(of: "</svg>")!.upperBound])
        let bars = htmlTags(chart, "<rect ")
        #expect(bars.count == 1)
        #expect((bars.first?["width"].flatMap(Double.init) ?? 999) < 20, "one bucket is a narrow bar: \(bars)")
        #expect(chart.contains(">300 ms</text>") && chart.contains(">1 s</text>"), "ticks on the axis")
        let value = Int(LogBucket.value(LogBucket.index(412)).rounded())
        #expect(chart.contains(">p50, p95 \(value) ms</text>") && !chart.contains(">p50 ") && !chart.contains(">p95 "),
                "one label for p50 and p95")
        #expect(html.contains("No key has cold starts both without and with pre-warming yet"))
        #expect(html.contains("for a question without <code>os</code>"), "the panel's basis is explained")
    }

    /// The change table: each key of the chosen model with its height now and, where it moved
    /// within the days of votes kept, the day and the height before; the filter narrows it.
    @Test func theChangeTableShowsWhenEachKeysHeightLastChanged() {
        var counts = AggregateDelta()
        for (language, height, count, day) in [("ja-JP", 380.0, 1_500, 20_375), ("ja-JP", 384.0, 300, 20_390), ("en-US", 336.0, 200, 20_390)] {
            var delta = ReleaseFleet.batch(model: "iPhone17,1", os: "26.1", language: language, height: height, count: count)
            delta.recordDay(receivedAt: Int64(day) * 86_400 + 60)
            counts.merge(delta)
        }
        var index = HeightIndex()
        index.apply(counts)
        let estimator = HeightEstimator()
        func page(_ filter: DashboardFilter) -> String {
            DashboardPage.render(DashboardInput(counts: counts, hourly: [], answersByBasis: nil, filter: filter, minSamples: 20,
                                                generatedAt: 20_391 * 86_400, live: false, estimate: { estimator.estimate($0, in: index) },
                                                changes: { estimator.heightChanges(model: $0, in: index) }))
        }
        let html = page(DashboardFilter(model: "iPhone17,1"))
        let rows = htmlTags(html, "<tr class=\"change\"")
        #expect(rows.map { $0["data-language"] } == ["en-US", "ja-JP"])
        #expect(rows[1]["data-height"] == "384.0" && rows[1]["data-from"] == "380.0" && rows[1]["data-changed-day"] == "20390")
        #expect(rows[0]["data-height"] == "336.0" && rows[0]["data-changed-day"] == nil)
        #expect(html.contains("<td>2025-10-29</td>") && html.contains("no change since 2025-10-29"), "day 20,390 is 2025-10-29")
        #expect(htmlTags(page(DashboardFilter(model: "iPhone17,1", language: "ja-JP")), "<tr class=\"change\"").count == 1)
        // Without votes per day (a database from before schema v10) the section says so.
        #expect(DashboardPage.render(Self.input()).contains("No votes per day for this model"))
    }

    @Test func everyChartIsThere() {
        let html = DashboardPage.render(Self.input())
        for id in ["filters", "heights", "basis", "coldstart", "animation", "hourly", "thin"] {
            #expect(html.contains("<section id=\"\(id)\""), "section \(id)")
        }
        #expect(htmlTags(html, "<rect class=\"basis\"").map { $0["data-count"] } == ["3", "0", "0", "0", "0", "1"])
        #expect(htmlTags(html, "<rect class=\"hour\"").first?["data-samples"] == "37")
        let saving = htmlTags(html, "<p class=\"saving\"").first
        let p50 = LogBucket.value(LogBucket.index(600)) - LogBucket.value(LogBucket.index(40))
        #expect(saving?["data-p50-saving"] == "\(p50)")
        #expect(htmlTags(html, "<tr class=\"thin-key\"").first?["data-docked"] == "37")
    }

    @Test func selfContainedAndAllowedByItsPolicy() throws {
        let html = DashboardPage.render(Self.input())
        #expect(!html.contains("<script") && !html.contains("http://") && !html.contains("https://") && !html.contains("url("))
        // The one <style> element's SHA-256 (computed by coreutils) is what the policy allows.
        let style = try #require(html.components(separatedBy: "<style>").dropFirst().first?.components(separatedBy: "</style>").first)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        input.fileHandleForWriting.write(Data(style.utf8))
        try input.fileHandleForWriting.close()
        let hex = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).prefix(64)
        process.waitUntilExit()
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        #expect(DashboardPage.contentSecurityPolicy.contains("style-src 'sha256-\(Data(bytes).base64EncodedString())'"))
        #expect(DashboardPage.contentSecurityPolicy.hasPrefix("default-src 'none'"))
    }

    @Test func filtersNarrowTheDataAndTheReportHasNoForm() {
        let other = DashboardPage.render(Self.input(filter: DashboardFilter(language: "en-US")))
        #expect(htmlTags(other, "<rect class=\"bar\"").isEmpty && other.contains("No docked heights for this filter"))
        let report = DashboardPage.render(Self.input(live: false))
        #expect(!report.contains("<form") && report.contains("written by kbtd report"))
    }

    @Test func badFilterValuesNameTheirField() throws {
        func parse(_ values: [String: String]) throws(FieldError) -> DashboardFilter { try DashboardFilter.parse { values[$0] } }
        #expect(try parse(["model": "iPhone17,1", "os": "26.1", "language": "ja-JP"])
            == DashboardFilter(model: "iPhone17,1", osMajor: 26, language: "ja-JP"))
        #expect(try parse(["model": "", "os": ""]) == DashboardFilter())
        for (field, value) in [("model", "<script>"), ("os", "twenty"), ("language", "ja JP")] {
            do {
                _ = try parse([field: value])
                Issue.record("\(field)=\(value) accepted")
            } catch {
                #expect(error.field == field)
            }
        }
    }
}
