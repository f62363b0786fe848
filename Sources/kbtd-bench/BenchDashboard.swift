import ArgumentParser
import Foundation
import KBTDCore
import KBTDReport

/// Times `DashboardPage.render` alone (no SQLite, no HTTP) over synthetic
/// counts with `--keys` distinct keys: what the page costs at 10k and 100k keys.
struct Dashboard: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Render time of the dashboard page by number of keys (in process).")
    @Option(help: "Distinct keys (model, OS major, language, orientation, keyboard type).") var keys = 100_000
    @Option(help: "Renders to time (the median is reported).") var runs = 5

    static let languages = ["en-US", "ja-JP", "zh-Hans", "zh-Hant", "ko-KR", "de-DE", "fr-FR", "es-ES", "it-IT", "pt-BR",
                            "ru-RU", "ar-SA", "hi-IN", "th-TH", "vi-VN", "tr-TR", "pl-PL", "nl-NL", "sv-SE", "emoji"]

    /// Key `i`: 250 models x 20 languages x 2 orientations x 12 keyboard types x OS majors 17...26.
    static func counts(keys: Int) -> AggregateDelta {
        var counts = AggregateDelta()
        var random = SplitMix64(seed: 7)
        let types = KeyboardTypes.all.sorted()
        for i in 0..<keys {
            let model = "iPhone\(i % 250 / 4 + 1),\(i % 4 + 1)"
            let language = languages[i / 250 % languages.count]
            let orientation: Orientation = i / 5_000 % 2 == 0 ? .portrait : .landscape
            let type = types[i / 10_000 % types.count]
            let os = 17 + i / 120_000 % 10
            let series = SeriesKey(model: model, osMajor: os, language: language, orientation: orientation, keyboardType: type)
            let base = (orientation == .portrait ? 640 : 400) + Int(random.next() % 40)
            for (offset, n) in [(0, 30), (-88, 6), (2, 2)] {
                counts.heights[HeightCountKey(series: series, placement: .docked, halfPoints: base + offset)] = Int64(n)
                counts.votes[SeriesBin(series: series, halfPoints: base + offset)] = Int64(n)
            }
            counts.sources[series] = [.trusted]
            counts.animations[AnimationCountKey(series: series, event: .show, bin: AnimationBin(durationMs: 250, curve: 7))] = 36
            counts.animations[AnimationCountKey(series: series, event: .change, bin: AnimationBin(durationMs: 0, curve: 7))] = 2
            for (preloaded, ms) in [(false, 450.0), (false, 900.0), (true, 35.0), (true, 60.0)] {
                counts.coldStarts[ColdStartCountKey(series: series, preloaded: preloaded,
                                                    bucket: LogBucket.index(ms + Double(random.next() % 50)))] = 3
            }
        }
        return counts
    }

    /// CPU time of this thread, seconds.
    static func cpuSeconds() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    func run() throws {
        let counts = Self.counts(keys: keys)
        var index = HeightIndex()
        index.apply(counts)
        let estimator = HeightEstimator()
        let now = Int64(Date().timeIntervalSince1970)
        let hourly = (0..<168).map { HourlyIngest(hour: now / 3600 * 3600 - Int64($0) * 3600, batches: 100, samples: 4_000, rejected: 3) }
        for filter in [DashboardFilter(), DashboardFilter(model: "iPhone1,1"), DashboardFilter(model: "iPhone1,1", language: "ja-JP")] {
            var times: [Double] = [], cpu: [Double] = []
            var size = 0
            for _ in 0..<runs {
                let cpuStart = Self.cpuSeconds()
                let start = ContinuousClock.now
                let html = DashboardPage.render(DashboardInput(
                    counts: counts, hourly: hourly, answersByBasis: BasisCounts(counts: [.modelOSLanguage: 10], since: now),
                    filter: filter, minSamples: 20, generatedAt: now, live: true, estimate: { estimator.estimate($0, in: index) }))
                times.append((ContinuousClock.now - start) / .milliseconds(1))
                cpu.append((Self.cpuSeconds() - cpuStart) * 1000)
                size = html.utf8.count
            }
            times.sort()
            cpu.sort()
            let name = filter.model.map { "model=\($0)" + (filter.language.map { " language=\($0)" } ?? "") } ?? "none"
            // CPU time too: on a shared machine the wall clock mostly measures the neighbours.
            print("dashboard: \(keys) keys, filter \(name): render median "
                  + String(format: "%.1f ms wall (min %.1f), %.1f ms CPU (min %.1f), page %d KiB", times[times.count / 2],
                           times.first!, cpu[cpu.count / 2], cpu.first!, size / 1024))
        }
    }
}
