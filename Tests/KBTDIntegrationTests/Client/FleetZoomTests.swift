import Foundation
import KBTDCore
import KBTDStore
import Testing

/// `kbtd-fleet --zoomed-share`: a share of each phone model runs Display Zoom, reporting its zoomed
/// screen (`data/display-zoom.csv`) and the zoomed keyboard heights; iPads never zoom.
@Suite("kbtd-fleet simulates phones with Display Zoom", .ownThreads, .timeLimit(.minutes(10)))
struct FleetZoomTests {
    /// Docked bins per (model, screen, orientation) in the daemon's database once it stopped, and
    /// what the fleet acknowledged and `kbtd stats` counted before it stopped.
    static func run(_ extra: [String]) async throws -> (screens: [String: [String: Set<Double>]], run: FleetRunTests.Run, statsSamples: Double?) {
        let daemon = try TestDaemon().start()
        let run = try await FleetRunTests.fleet(["--url", "http://127.0.0.1:\(daemon.port)", "--devices", "80", "--seed", "5",
                                                 "--data", TestPaths.fixtures.path] + extra)
        let samples = try daemon.stats()["samples"]?.double
        #expect(daemon.stop() == 0)
        var screens: [String: [String: Set<Double>]] = [:]
        for (bin, count) in try SQLiteTelemetryStore(path: daemon.database, access: .readOnly).loadCounts().screenCounts
        where count.samples > 0 {
            screens[bin.series.model, default: [:]]["\(bin.screen) \(bin.series.orientation.rawValue)", default: []]
                .insert(HeightBin.points(bin.halfPoints))
        }
        return (screens, run, samples)
    }

    @Test func aShareOfPhonesReportsTheZoomedScreenAndItsKeyboardHeights() async throws {
        let zoomed = try await Self.run(["--zoomed-share", "0.5"])
        #expect(zoomed.run.status == 0, "\(zoomed.run.stderr)")
        // kbtd counted every sample the fleet was told it accepted, zoomed phones included.
        let acknowledged = try #require(zoomed.run.acknowledged, "\(zoomed.run.lastLine)")
        #expect(zoomed.statsSamples == Double(acknowledged.samples))
        #expect(zoomed.run.stdout.contains(" with Display Zoom)"), "\(zoomed.run.stdout.prefix(300))")

        // iPhone 12 / 13 / 14 (390x844) and 14 Pro / 15 / 16 (393x852) zoom to 320x693; the X / XS family
        // (375x812) too. Their portrait keyboards are 17 pt shorter zoomed (336 -> 319, 335 -> 318, the
        // no-bar 291 -> 274, a candidate bar 344 -> 327); landscape keeps the standard heights.
        let notched = ["iPhone13,2", "iPhone13,3", "iPhone14,5", "iPhone14,2", "iPhone14,7", "iPhone15,2", "iPhone15,4",
                       "iPhone16,1", "iPhone17,3", "iPhone17,5", "iPhone18,5", "iPhone10,3", "iPhone10,6", "iPhone11,2",
                       "iPhone12,3", "iPhone13,1", "iPhone14,4"]
        var zoomedModels = 0, standardModels = 0
        for model in notched {
            guard let screens = zoomed.screens[model] else { continue }
            if let portrait = screens["320x693 portrait"] {
                zoomedModels += 1
                #expect(portrait.isSubset(of: [318, 319, 274, 326, 327]), "\(model) zoomed: \(portrait)")
            }
            if let landscape = screens["320x693 landscape"] {
                #expect(landscape.isSubset(of: [209, 172, 217]), "\(model) zoomed landscape: \(landscape)")
            }
            for (screen, heights) in screens where screen.hasSuffix("portrait") && !screen.hasPrefix("320x693") {
                standardModels += 1
                #expect(heights.isSubset(of: [335, 336, 291, 343, 344]), "\(model) \(screen): \(heights)")
            }
        }
        #expect(zoomedModels >= 3 && standardModels >= 3, "both screens of several models: \(zoomedModels), \(standardModels)")
        // iPads have no Display Zoom: only their own screens.
        let padScreens = Set(zoomed.screens.filter { $0.key.hasPrefix("iPad") }.values.flatMap(\.keys).map { $0.prefix { $0 != " " } })
        #expect(!padScreens.isEmpty && padScreens.isSubset(of: ["768x1024", "810x1080", "834x1112", "834x1194", "744x1133", "1024x1366"]),
                "\(padScreens)")

        // Display Zoom off: every phone reports its standard screen.
        let standard = try await Self.run(["--zoomed-share", "0"])
        #expect(standard.run.status == 0, "\(standard.run.stderr)")
        let reported = Set(standard.screens.values.flatMap(\.keys).map { String($0.prefix { $0 != " " }) })
        #expect(reported.isDisjoint(with: ["320x693", "320x568"]), "\(reported)")
        // The zoom is drawn apart from the rest of each device: the same devices send the same number of batches.
        #expect(standard.run.acknowledged?.batches == acknowledged.batches)
    }

    @Test func aShareOutsideZeroToOneIsRefusedNamingTheFlag() async throws {
        let outside = try await FleetRunTests.fleet(["--zoomed-share", "1.5"])
        #expect(outside.status == 64 && outside.stderr.contains("--zoomed-share"))
        let noTable = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: noTable) }
        for file in ["iphone-keyboard-heights.csv", "ipad-keyboard-heights.csv"] {
            try FileManager.default.copyItem(at: TestPaths.fixtures.appendingPathComponent(file), to: noTable.appendingPathComponent(file))
        }
        // Asked for zoomed phones with a data folder that has no zoom table: refused before any device runs.
        let missing = try await FleetRunTests.fleet(["--url", "http://127.0.0.1:\(unreachablePort())", "--devices", "2",
                                                     "--data", noTable.path, "--zoomed-share", "0.2"])
        #expect(missing.status != 0 && missing.stderr.contains("display-zoom.csv"), "\(missing.stderr)")
    }
}
