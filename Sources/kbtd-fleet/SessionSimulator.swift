import Foundation
import struct KBTDCore.SplitMix64
import KeyboardTelemetryClient

/// Generates what one device's app records, session by session, following
/// `data/README.md`: the first show of a session often reports the
/// no-bar height and a `change` follows with the bar (duration 0); CJK
/// keyboards carry a candidate bar that stays with predictive off; emoji has
/// the bar height; accessory views are inside the height; the first show after
/// launch is a cold start (tens of ms when pre-warmed); iPads with a hardware
/// keyboard show only the shortcut bar; floating keyboards send hide and
/// odd frames; clocks are skewed; a few samples are simply broken.
struct SessionSimulator {
    /// How much taller a CJK keyboard is than the with-bar height (its candidate bar), points.
    static let candidateBarExtra = 8.0
    static let textTypes: [KeyboardType] = [.emailAddress, .URL, .webSearch, .twitter, .asciiCapable]
    static let numberTypes: [KeyboardType] = [.numberPad, .decimalPad, .phonePad, .asciiCapableNumberPad]

    /// The first show of the first session, as `estimatedHeight` would be asked before it.
    struct FirstShow: Equatable {
        var language: String
        var orientation: KeyboardOrientation
        var keyboardType: KeyboardType
        /// The system height it settles at (accessory removed).
        var height: Double
    }

    let device: FleetDevice
    private var random: SplitMix64
    private let now: Double
    /// Session start times, oldest first, within the last three days.
    private let starts: [Double]
    private(set) var firstShow: FirstShow?
    private(set) var badSamples = 0
    private(set) var noBarQuirks = 0

    init(device: FleetDevice, seed: UInt64, now: Date) {
        self.device = device
        var random = SplitMix64(seed: seed ^ 0x5E55_1011, stream: UInt64(device.index))
        self.now = now.timeIntervalSince1970
        starts = (0..<device.sessions).map { _ in random.uniform(600...(3 * 86_400)) }.sorted(by: >)
            .map { now.timeIntervalSince1970 - $0 }
        self.random = random
    }

    static func isCJK(_ language: String) -> Bool {
        language.hasPrefix("ja") || language.hasPrefix("zh") || language.hasPrefix("ko")
    }

    /// The docked system keyboard height (no accessory) and, for a first show, the height it reports before the bar appears.
    func height(language: String, orientation: KeyboardOrientation, type: KeyboardType) -> (settled: Double, firstFrame: Double) {
        let table = tableHeight(language: language, orientation: orientation, type: type)
        let shift = device.osShift + device.releaseShifts.reduce(0) { $0 + $1.points(for: language) }
            + (device.zoom?.difference(orientation == .portrait) ?? 0)
        return (table.settled + shift, table.firstFrame + shift)
    }

    /// The height the published table gives, before any `--os-shift` or Display Zoom.
    private func tableHeight(language: String, orientation: KeyboardOrientation, type: KeyboardType) -> (settled: Double, firstFrame: Double) {
        let family = device.family
        let bar = orientation == .portrait ? family.portraitBar : family.landscapeBar
        let noBar = orientation == .portrait ? family.portraitNoBar : family.landscapeNoBar
        if language == "emoji" { return (bar, bar) }
        if Self.isCJK(language) { return (bar + Self.candidateBarExtra, bar + Self.candidateBarExtra) }
        // Number pads on a phone have no predictive bar; an iPad shows its full keyboard.
        if !device.isPad && Self.numberTypes.contains(type) { return (noBar, noBar) }
        return device.predictiveBar ? (bar, noBar) : (noBar, noBar)
    }

    /// The samples of session `number` (0-based), in time order.
    mutating func session(_ number: Int) -> [KeyboardSample] {
        var t = starts[number]
        var orientation: KeyboardOrientation = random.chance(device.isPad ? 0.5 : 0.15) ? .landscape : .portrait
        var language = device.languages[0]
        var type: KeyboardType = random.chance(0.85) ? .default : random.pick((Self.textTypes + Self.numberTypes).map { ($0, 1.0) })
        let hardware = device.hardwareKeyboard && random.chance(0.8)
        let floating = device.isPad && !hardware && random.chance(0.08)
        let accessory = device.accessoryHeight
        var samples: [KeyboardSample] = []

        func safeArea() -> Double { orientation == .portrait ? device.family.safeAreaPortrait : device.family.safeAreaLandscape }
        func add(_ event: KeyboardEvent, _ systemHeight: Double, duration: Double = 0.25, cold: Double? = nil) {
            t += random.uniform(0.2...3)
            let settledAnimation = random.chance(0.99)
            var sample = KeyboardSample(
                event: event, height: systemHeight + accessory, accessoryHeight: accessory, safeAreaBottom: min(safeArea(), systemHeight + accessory),
                duration: settledAnimation ? duration : 0.35, curve: settledAnimation ? 7 : 0, language: language,
                orientation: orientation, keyboardType: type, coldStartMs: cold, preloaded: cold == nil ? nil : device.preWarms,
                floating: floating, hardwareKeyboard: hardware,
                timestamp: Date(timeIntervalSince1970: t + device.clockSkew))
            if random.chance(0.004) { breakSample(&sample) }
            samples.append(sample)
        }

        // The first show after launch: a cold start, unless the app pre-warmed the keyboard.
        let cold = device.preWarms ? random.uniform(12...80)
            : min(random.logNormal(median: device.isOld ? 900 : 450, sigma: 0.55), 8_000)
        if hardware {
            let bar: Double = device.shortcutBar ? 55 : 0
            add(.show, bar, cold: cold)
            for _ in 0..<random.integer(1...6) {
                add(.hide, bar)
                add(.show, bar)
            }
            return samples
        }
        var current = height(language: language, orientation: orientation, type: type)
        if floating {
            // Undocking: the docked keyboard hides, then the floating one reports its own small frame.
            add(.show, current.settled, cold: cold)
            add(.hide, current.settled)
            for _ in 0..<random.integer(1...4) { add(.change, 254, duration: 0) }
            return samples
        }
        if number == 0 {
            firstShow = FirstShow(language: language, orientation: orientation, keyboardType: type, height: current.settled)
        }
        if current.firstFrame != current.settled && random.chance(0.6) {
            noBarQuirks += 1
            add(.show, current.firstFrame, cold: cold)
            add(.change, current.settled, duration: 0)  // only the QuickType bar appeared
        } else {
            add(.show, current.settled, cold: cold)
        }
        for _ in 0..<random.integer(1...10) {
            add(.hide, current.settled)
            t += random.uniform(2...300)
            if random.chance(device.isPad ? 0.2 : 0.05) { orientation = orientation == .portrait ? .landscape : .portrait }
            if random.chance(0.1) { type = random.chance(0.5) ? .default : random.pick((Self.textTypes + Self.numberTypes).map { ($0, 1.0) }) }
            current = height(language: language, orientation: orientation, type: type)
            add(.show, current.settled)
            // Switching keyboards while it is up: emoji, or the second language.
            if random.chance(0.15), let other = device.usesEmoji ? "emoji" : device.languages.dropFirst().first {
                let back = language
                language = other
                add(.change, height(language: language, orientation: orientation, type: type).settled)
                if random.chance(0.7) {
                    language = back
                    add(.change, current.settled)
                }
                current = height(language: language, orientation: orientation, type: type)
            }
        }
        add(.hide, current.settled)
        return samples
    }

    /// The faults kbtd must reject one by one.
    private mutating func breakSample(_ sample: inout KeyboardSample) {
        badSamples += 1
        switch random.integer(0...4) {
        case 0: sample.curve = 99
        case 1: sample.height = -sample.height
        case 2: sample.duration = 9
        case 3: sample.accessoryHeight = sample.height + 10
        default: sample.language = "en US"
        }
    }
}
