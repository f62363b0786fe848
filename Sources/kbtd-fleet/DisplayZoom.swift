import Foundation
import struct KBTDCore.SplitMix64

/// One row of `data/display-zoom.csv`: what a phone of one standard screen reports when zoomed
/// (Display Zoom's "Larger Text"), and how far its docked keyboard moves then.
struct ZoomedScreen: Sendable, Equatable {
    var standard: String
    var zoomed: String
    var portraitDifference: Double
    var landscapeDifference: Double

    func difference(_ portrait: Bool) -> Double { portrait ? portraitDifference : landscapeDifference }
}

/// Which phones of the fleet run Display Zoom (`--zoomed-share`), and what that changes: they send
/// their zoomed screen as `device.screen` (and `screen=`) and their keyboards the zoomed heights.
/// The table is a simulation input (see the CSV's header), like the heights tables.
struct DisplayZoom: Sendable, Equatable {
    static let file = "display-zoom.csv"
    /// Without `--zoomed-share`: enough zoomed phones of the common models that a plain
    /// `kbtd-fleet --devices 10000` gives kbtd screen variants to learn (an assumed share, not a
    /// published one).
    static let defaultShare = 0.15

    /// Standard screen (`390x844`) -> its zoomed screen.
    var screens: [String: ZoomedScreen] = [:]
    /// Share (0-1) of the phones with a zoomed screen in the table that run zoomed.
    var share: Double = 0

    /// Loads the table next to the heights tables. Without the file (an older `--data` folder) no
    /// phone zooms, unless a share was asked for explicitly.
    static func load(from directory: URL, share: Double, explicit: Bool) throws -> DisplayZoom {
        let url = directory.appendingPathComponent(file)
        guard FileManager.default.fileExists(atPath: url.path) else {
            if explicit && share > 0 {
                throw KeyboardTable.LoadError(description: "--zoomed-share \(share): no \(file) in \(directory.path)")
            }
            return DisplayZoom()
        }
        var screens: [String: ZoomedScreen] = [:]
        for row in try KeyboardTable.rows(url) {
            let standard = (row.cells["standard_screen"] ?? "").trimmingCharacters(in: .whitespaces)
            let zoomed = (row.cells["zoomed_screen"] ?? "").trimmingCharacters(in: .whitespaces)
            guard Self.isScreen(standard), Self.isScreen(zoomed) else {
                throw KeyboardTable.LoadError(description: "\(file): screens must be WIDTHxHEIGHT in points, got \(row.cells)")
            }
            screens[standard] = ZoomedScreen(standard: standard, zoomed: zoomed,
                                             portraitDifference: try KeyboardTable.number(row, "portrait_difference"),
                                             landscapeDifference: try KeyboardTable.number(row, "landscape_difference"))
        }
        return DisplayZoom(screens: screens, share: share)
    }

    static func isScreen(_ text: String) -> Bool {
        let parts = text.split(separator: "x", omittingEmptySubsequences: false)
        return parts.count == 2 && parts.allSatisfy { Int($0).map { $0 > 0 } ?? false }
    }

    /// Whether device `index` of `seed` runs zoomed, and how: drawn from a stream of its own, so the
    /// rest of the device (model, OS, languages, sessions) is the one the same seed always draws.
    func zoom(device index: Int, screen: String?, isPad: Bool, seed: UInt64) -> ZoomedScreen? {
        guard !isPad, share > 0, let screen, let zoomed = screens[screen] else { return nil }
        var random = SplitMix64(seed: seed ^ 0x0D15_9A7E_2003, stream: UInt64(index))
        return random.chance(share) ? zoomed : nil
    }
}
