import Foundation
import struct KBTDCore.SplitMix64
import KeyboardTelemetryClient

/// One simulated phone or iPad and the app on it: what stays the same across its sessions.
struct FleetDevice: Sendable {
    var index: Int
    var model: String
    var family: ModelFamily
    var os: String
    /// The keyboards the user switches between; the first is the one that shows first.
    var languages: [String]
    var usesEmoji: Bool
    var predictiveBar: Bool
    /// The app's inputAccessoryView height (0: none).
    var accessoryHeight: Double
    /// The app pre-warms the keyboard at launch.
    var preWarms: Bool
    /// iPad with a hardware keyboard attached; `shortcutBar` false when shortcuts are off (0 pt).
    var hardwareKeyboard: Bool
    var shortcutBar: Bool
    /// Seconds the device clock is off by; beyond kbtd's window (30 days back, 1 day ahead) every sample is rejected.
    var clockSkew: Double
    var sessions: Int
    /// Points every docked keyboard on this device's OS major is taller than the table says (`--os-shift`).
    var osShift: Double = 0
    /// Points added to the docked keyboards of one language (nil: every language) on this device's
    /// OS release (`--os-shift 26.2:ja-JP=4`), on top of `osShift`.
    var releaseShifts: [ReleaseShift] = []
    /// Display Zoom on (`--zoomed-share`): the zoomed screen it reports and its keyboards' difference.
    var zoom: ZoomedScreen?

    var isPad: Bool { family.isPad }
    /// Older hardware keeps the out-of-process keyboard waiting longer on a cold start.
    var isOld: Bool { identifierMajor <= (isPad ? 7 : 11) }

    var identifierMajor: Int {
        Int(model.drop { !$0.isNumber }.prefix { $0.isNumber }) ?? 0
    }

    var telemetryDevice: TelemetryDevice {
        TelemetryDevice(model: model, os: os, app: "com.example.chat", appVersion: "3.2.0", screen: zoom?.zoomed ?? family.screens[model])
    }
}

/// Draws devices from the model tables: every choice comes from the device's
/// own seeded stream, so device `i` of seed `s` is always the same device.
struct FleetPlan: Sendable {
    let families: [ModelFamily]
    let seed: UInt64
    /// OS major -> points added to every docked height on it (`--os-shift 26=4`).
    let osShifts: [Int: Double]
    /// Shifts of one OS release (major.minor), optionally of one language (`--os-shift 26.2:ja-JP=4`).
    let releaseShifts: [ReleaseShift]
    /// When the shifted releases ship and how many devices run them (`--release-from`, `--release-share`).
    let rollout: ReleaseRollout
    /// Which phones run Display Zoom (`--zoomed-share`).
    let displayZoom: DisplayZoom
    /// Identifier -> family, with a popularity weight.
    private let phones: [((String, ModelFamily), Double)]
    private let pads: [((String, ModelFamily), Double)]

    init(families: [ModelFamily], seed: UInt64, osShifts: [Int: Double] = [:], releaseShifts: [ReleaseShift] = [],
         rollout: ReleaseRollout = ReleaseRollout(), displayZoom: DisplayZoom = DisplayZoom()) {
        self.families = families
        self.displayZoom = displayZoom
        self.seed = seed
        self.osShifts = osShifts
        self.releaseShifts = releaseShifts
        self.rollout = rollout
        // Newer phones are more common; iPads are weighted evenly.
        let popularity: [Int: Double] = [10: 2, 11: 3, 12: 5, 13: 7, 14: 9, 15: 9, 16: 9, 17: 8, 18: 6]
        var phones: [((String, ModelFamily), Double)] = []
        var pads: [((String, ModelFamily), Double)] = []
        for family in families {
            for identifier in family.identifiers {
                let major = Int(identifier.drop { !$0.isNumber }.prefix { $0.isNumber }) ?? 0
                if family.isPad { pads.append(((identifier, family), 1)) } else { phones.append(((identifier, family), popularity[major] ?? 3)) }
            }
        }
        self.phones = phones
        self.pads = pads
    }

    /// Keyboard languages by share of devices (CJK languages carry a candidate bar).
    static let languages: [(String, Double)] = [
        ("en-US", 34), ("en-GB", 6), ("de-DE", 6), ("fr-FR", 5), ("es-ES", 5), ("pt-BR", 5), ("it-IT", 2), ("ru-RU", 4),
        ("ja-JP", 9), ("zh-Hans", 8), ("zh-Hant", 2), ("ko-KR", 4), ("ar", 2), ("hi", 2), ("tr-TR", 2), ("nl-NL", 2),
        ("pl-PL", 2),
    ]

    func device(_ index: Int) -> FleetDevice {
        var random = SplitMix64(seed: seed, stream: UInt64(index))
        let isPad = !pads.isEmpty && random.chance(0.12)
        let (model, family) = random.pick(isPad || phones.isEmpty ? pads : phones)
        let major = Int(model.drop { !$0.isNumber }.prefix { $0.isNumber }) ?? 0
        let os = rollout.os(random.pick(Self.osVersions(isPad: isPad, major: major)), device: index, seed: seed,
                            releases: releaseShifts)
        var languages = [random.pick(Self.languages)]
        if !languages[0].hasPrefix("en"), random.chance(0.4) { languages.append("en-US") }
        let skew: Double = random.pick([
            (random.uniform(-3...3), 92),  // NTP-synchronised
            (random.uniform(-1800...1800), 6),  // minutes off
            (random.uniform(-36_000...36_000), 1.5),  // hours off (a manual time zone change)
            // Far off: every sample lands at least a day outside kbtd's window (sessions are up to 3 days old),
            // so the same seed is rejected the same way whenever it runs.
            (random.chance(0.5) ? random.uniform(5 * 86_400...9 * 86_400) : -random.uniform(31 * 86_400...60 * 86_400), 0.5),
        ])
        let hardware = isPad && random.chance(0.3)
        return FleetDevice(
            index: index, model: model, family: family, os: os, languages: languages, usesEmoji: random.chance(0.7),
            predictiveBar: random.chance(0.85), accessoryHeight: random.pick([(0, 60), (44, 25), (52, 15)]),
            preWarms: random.chance(0.3), hardwareKeyboard: hardware, shortcutBar: random.chance(0.7), clockSkew: skew,
            sessions: 1 + min(Int(random.logNormal(median: 2.5, sigma: 0.7)), 11),
            osShift: osShifts[Int(os.prefix { $0 != "." }) ?? 0] ?? 0,
            releaseShifts: releaseShifts.filter { $0.applies(to: os) },
            zoom: displayZoom.zoom(device: index, screen: family.screens[model], isPad: isPad, seed: seed))
    }

    /// What a model can run: old phones stop at iOS 16, the newest start at 26.
    static func osVersions(isPad: Bool, major: Int) -> [(String, Double)] {
        if isPad {
            if major <= 7 { return [("17.7.10", 0.6), ("16.7.12", 0.4)] }
            if major <= 12 { return [("18.6.2", 0.5), ("26.1", 0.4), ("26.0.1", 0.1)] }
            return [("26.1", 0.6), ("18.6.2", 0.3), ("26.0.1", 0.1)]
        }
        switch major {
        case ...10: return [("16.7.12", 0.6), ("16.7.10", 0.4)]
        case 11: return [("18.6.2", 0.6), ("18.5", 0.3), ("17.7.2", 0.1)]
        case 12...17: return [("26.1", 0.4), ("26.0.1", 0.15), ("18.6.2", 0.35), ("18.5", 0.1)]
        default: return [("26.1", 0.7), ("26.0.1", 0.2), ("26.2", 0.1)]
        }
    }
}

/// When the shifted releases of `--os-shift MAJOR.MINOR...` ship: devices are simulated (and send)
/// roughly in index order, so device `firstDevice` is the release's first day. Before it, no device
/// runs a shifted release (a device the tables put on one runs the minor before); from it on, a
/// device that runs the release's major runs the release with probability `share` (nil: as the tables say).
struct ReleaseRollout: Sendable, Equatable {
    var firstDevice = 0
    var share: Double?

    func os(_ drawn: String, device index: Int, seed: UInt64, releases: [ReleaseShift]) -> String {
        guard firstDevice > 0 || share != nil else { return drawn }
        let parts = drawn.split(separator: ".").map { Int($0) ?? -1 }
        for release in releases where parts.first == release.major {
            let onIt = release.applies(to: drawn)
            let earlier = "\(release.major).\(max(release.minor - 1, 0))"
            if index < firstDevice { return onIt ? earlier : drawn }
            guard let share else { return drawn }
            // A stream of its own, so the rest of the device is the one the same seed always draws.
            var random = SplitMix64(seed: seed ^ 0x0005_21EA_5E00, stream: UInt64(index))
            return random.chance(share) ? "\(release.major).\(release.minor)" : (onIt ? earlier : drawn)
        }
        return drawn
    }
}

/// A keyboard move in one OS release (`--os-shift 26.2:ja-JP=4`): devices on that
/// release (any patch of it) report `points` more for `language` (nil: every language).
struct ReleaseShift: Sendable, Equatable {
    var major: Int
    var minor: Int
    var language: String?
    var points: Double

    func applies(to os: String) -> Bool {
        let parts = os.split(separator: ".").map { Int($0) ?? -1 }
        return parts.first == major && (parts.count > 1 ? parts[1] : 0) == minor
    }

    func points(for language: String) -> Double {
        self.language == nil || self.language == language ? points : 0
    }
}
