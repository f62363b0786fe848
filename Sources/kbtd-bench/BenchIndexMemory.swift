import ArgumentParser
import Foundation
import KBTDCore

/// The index alone: builds a `HeightIndex` in this process from the same keys
/// `kbtd-bench keys` sends the daemon (100 languages per model, one docked
/// sample each from a trusted peer) and reports how much resident memory it
/// added per key, without HTTP, SQLite or the key gate around it.
struct IndexMemory: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "index-memory", abstract: "Resident memory per key of the in-memory height index, in-process.")
    @Option var count = 100_000
    /// OS releases each key was reported on (26.1, 26.2, ...): its entries in the release dimension.
    @Option var releases = 2
    /// UTC days each key received votes on within the index's kept days (ageing votes, `VoteAge.swift`).
    @Option var voteDays = 1
    /// As `kbtd-bench keys`: every device reports its screen (`390x844`), and one model in
    /// `zoomedEvery` also has Display Zoom phones (`320x693`, 17 pt lower) on every key (0: none).
    @Option var zoomedEvery = 10
    /// No screen on any sample: the index without its screen dimension.
    @Flag var noScreens = false

    func run() throws {
        let perModel = 100
        // The deltas are built first, so only the index's own growth is measured.
        let deltas = stride(from: 0, to: count, by: perModel).flatMap { first in
            let model = first / perModel
            let screens = [(ScreenSize(width: 390, height: 844), 672)]
                + (zoomedEvery > 0 && model % zoomedEvery == 0 ? [(ScreenSize(width: 320, height: 693), 638)] : [])
            return screens.map { screen, halfPoints in
                var delta = AggregateDelta()
                for i in 0..<min(perModel, count - first) {
                    let series = SeriesKey(model: "Bench\(model)", osMajor: 26, language: "l\(i)",
                                           orientation: .portrait, keyboardType: "default")
                    delta.heights[HeightCountKey(series: series, placement: .docked, halfPoints: halfPoints)] = 1
                    delta.votes[SeriesBin(series: series, halfPoints: halfPoints)] = 1
                    delta.safeAreas[SeriesBin(series: series, halfPoints: 0)] = 1
                    delta.sources[series] = [.trusted]
                    delta.animations[AnimationCountKey(series: series, event: .show, bin: AnimationBin(durationMs: 250, curve: 7))] = 1
                    for minor in 0..<max(0, releases) {
                        delta.releases[ReleaseBin(series: series, minor: minor + 1, halfPoints: halfPoints)] = ReleaseCount(samples: 1, votes: 1)
                        delta.releaseSources[ReleaseKey(series: series, minor: minor + 1)] = [.trusted]
                    }
                    for day in 0..<max(0, voteDays) {
                        delta.dayVotes[DayVoteBin(series: series, day: 20_000 + day, halfPoints: halfPoints)] = 1
                    }
                }
                delta.recordScreen(noScreens ? nil : screen)
                return delta
            }
        }
        let pid = ProcessInfo.processInfo.processIdentifier
        let before = residentMiB(pid: pid) ?? .nan
        var index = HeightIndex()
        for delta in deltas { index.apply(delta) }
        let added = (residentMiB(pid: pid) ?? .nan) - before
        print(String(format: "index-memory: %d keys, %d (key, release) entries, %d (key, screen) entries, %d vote day(s) per key, %.1f MiB resident added, %.0f bytes per key",
                     index.seriesCount, index.releaseCount, index.screenEntryCount, voteDays, added, added * 1_048_576 / Double(max(1, index.seriesCount))))
    }
}
