import Foundation
import KBTDCore
import Testing

/// Keyboard heights from `data/` (the tables kbtd-fleet reads), one row per model family.
struct KeyboardFacts {
    var identifiers: [String]
    var portraitBar: Double
    var portraitNoBar: Double
    var landscapeBar: Double
    var landscapeNoBar: Double

    static func load(_ file: String) throws -> [KeyboardFacts] {
        let text = try String(contentsOf: TestPaths.fixtures.appendingPathComponent(file), encoding: .utf8)
        let lines = text.split(separator: "\n").filter { !$0.hasPrefix("#") }.dropFirst()  // header
        return lines.map { line in
            let cells = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            if file.hasPrefix("iphone") {
                // identifiers hold commas ("iPhone10,1 iPhone10,4"): count columns from the right.
                let n = cells.count
                let identifiers = cells[0..<(n - 8)].joined(separator: ",").split(separator: " ").map(String.init)
                return KeyboardFacts(identifiers: identifiers, portraitBar: Double(cells[n - 5])!, portraitNoBar: Double(cells[n - 4])!,
                                     landscapeBar: Double(cells[n - 3])!, landscapeNoBar: Double(cells[n - 2])!)
            }
            return KeyboardFacts(identifiers: [], portraitBar: Double(cells[1])!, portraitNoBar: Double(cells[2])!,
                                 landscapeBar: Double(cells[3])!, landscapeNoBar: Double(cells[4])!)
        }
    }
}

/// Simulates phones as the data README describes them: a first show that
/// reports the no-bar height followed by a `change` to the bar height, CJK
/// candidate bars, emoji keyboards, accessory views, cold starts with and
/// without pre-warming, iPad hardware keyboards, and a few bad samples.
struct FleetSimulator {
    static let cjkExtra = 8.0
    var generator = SplitMix64(seed: 2026)

    struct Device {
        var model: String
        var facts: KeyboardFacts
        var isPad: Bool
    }

    mutating func pick<T>(_ weighted: [(T, Double)]) -> T {
        let total = weighted.reduce(0) { $0 + $1.1 }
        var roll = generator.unit() * total
        for (value, weight) in weighted {
            roll -= weight
            if roll < 0 { return value }
        }
        return weighted.last!.0
    }

    /// One app session on one device: what its batch holds.
    mutating func session(_ device: Device, now: Double) -> [TestSample] {
        let language = pick([("en-US", 0.55), ("ja-JP", 0.15), ("zh-Hans", 0.1), ("emoji", 0.12), ("de-DE", 0.08)])
        let landscape = generator.unit() < 0.2
        let orientation = landscape ? "landscape" : "portrait"
        let cjk = language == "ja-JP" || language == "zh-Hans"
        let bar = (landscape ? device.facts.landscapeBar : device.facts.portraitBar) + (cjk ? Self.cjkExtra : 0)
        let noBar = cjk || language == "emoji" ? bar : (landscape ? device.facts.landscapeNoBar : device.facts.portraitNoBar)
        let accessory: Double? = generator.unit() < 0.3 ? 44 : nil
        let safeArea: Double = device.facts.portraitBar > 300 && !landscape ? 34 : (landscape ? 21 : 0)
        var t = now - generator.unit() * 86_400
        var samples: [TestSample] = []
        func sample(_ event: String, _ height: Double, duration: Double = 0.25) -> TestSample {
            t += 1 + generator.unit() * 30
            var sample = TestSample(t: t, event: event, language: language, orientation: orientation,
                                    height: height + (event == "hide" ? 0 : accessory ?? 0), duration: duration)
            sample.accessoryHeight = event == "hide" ? nil : accessory
            sample.safeAreaBottom = min(safeArea, sample.height)
            return sample
        }
        if device.isPad && generator.unit() < 0.4 {
            // Hardware keyboard attached: only the 55 pt shortcut bar shows.
            for _ in 0..<4 {
                var shortcut = TestSample(t: t, event: "show", language: language, orientation: orientation, height: 55)
                shortcut.hardwareKeyboard = true
                samples.append(shortcut)
            }
            return samples
        }
        // First show after launch: cold start, no-bar height, then the bar appears (duration 0).
        var first = sample("show", noBar)
        let preloaded = generator.unit() < 0.3
        first.preloaded = preloaded
        first.coldStartMs = preloaded ? 15 + generator.unit() * 60 : 250 + 1750 * pow(generator.unit(), 2)
        samples.append(first)
        if noBar != bar { samples.append(sample("change", bar, duration: 0)) }
        for _ in 0..<(3 + Int(generator.next() % 4)) {
            samples.append(sample("hide", bar))
            samples.append(sample("show", bar))
        }
        if generator.unit() < 0.05 {
            var bad = sample("show", bar)
            bad.curve = 99
            samples.append(bad)
        }
        return samples
    }
}

@Suite("Realistic fleet against the live daemon", .ownThreads, .timeLimit(.minutes(10)))
struct FleetTests {
    @Test func servedHeightsMatchThePublishedTable() throws {
        let phones = try KeyboardFacts.load("iphone-keyboard-heights.csv")
        let pads = try KeyboardFacts.load("ipad-keyboard-heights.csv")
        #expect(phones.count >= 10 && pads.count >= 4)
        var devices: [FleetSimulator.Device] = phones.map { FleetSimulator.Device(model: $0.identifiers[0], facts: $0, isPad: false) }
        devices.append(FleetSimulator.Device(model: "iPad14,3", facts: pads[1], isPad: true))

        let daemon = try TestDaemon().start()
        var simulator = FleetSimulator()
        let now = Date().timeIntervalSince1970
        var bodies: [[UInt8]] = []
        var sent = 0
        for device in devices {
            for _ in 0..<60 {
                let samples = simulator.session(device, now: now)
                sent += samples.count
                bodies.append(gzip(batchBody(model: device.model, os: "26.1", samples: samples)))
            }
        }
        let accepted = ConcurrentResults<Int>()
        let failures = ConcurrentResults<String>()
        let toSend = bodies
        DispatchQueue.concurrentPerform(iterations: 4) { worker in
            for i in stride(from: worker, to: toSend.count, by: 4) {
                do {
                    let response = try daemon.post(toSend[i], encoding: "gzip")
                    guard response.status == 202, let count = response.json?["accepted"]?.double else {
                        failures.append("batch \(i): \(response.status) \(response.text)")
                        continue
                    }
                    accepted.append(Int(count))
                } catch {
                    failures.append("batch \(i): \(error)")
                }
            }
        }
        #expect(failures.values.isEmpty, "\(failures.values)")
        let acceptedTotal = accepted.values.reduce(0, +)
        #expect(acceptedTotal > sent * 9 / 10 && acceptedTotal <= sent)
        let stats = try daemon.stats()
        #expect(stats["samples"] == .number(Double(acceptedTotal)))

        var checked = 0
        for device in devices {
            for (language, extra) in [("en-US", 0.0), ("ja-JP", FleetSimulator.cjkExtra), ("emoji", 0.0)] {
                for (orientation, bar) in [("portrait", device.facts.portraitBar), ("landscape", device.facts.landscapeBar)] {
                    let response = try daemon.get("/v1/height?model=\(device.model)&language=\(language)&orientation=\(orientation)&os=26.1")
                    guard response.json?["basis"] == .string("model+os+language") else { continue }
                    checked += 1
                    #expect(response.json?["height"] == .number(bar + extra),
                            "\(device.model) \(language) \(orientation): \(response.text)")
                    if let row = statsRow(stats, model: device.model, language: language, orientation: orientation) {
                        #expect(row["height_mode"] == .number(bar + extra))
                        #expect(row["curve7_share"]?.double ?? 0 > 0.9)
                    }
                }
            }
        }
        #expect(checked >= 30, "enough keys must reach the first level to make this test mean something (\(checked))")

        // Cold start: pre-warmed shows are far faster than cold ones.
        let row = try #require(statsRow(stats, model: devices[0].model, language: "en-US", osMajor: 26))
        let cold = try #require(row["cold_start_p50_ms"]?.double)
        let warm = try #require(row["preloaded_p50_ms"]?.double)
        #expect(cold > 250 && warm < 80)
    }
}
