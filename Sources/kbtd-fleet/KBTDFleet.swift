import ArgumentParser
import Foundation
import KeyboardTelemetryClient

/// `kbtd-fleet`: simulates a fleet of iPhones and iPads running an app that
/// embeds KeyboardTelemetryClient, and sends what they record to kbtd.
@main
struct KBTDFleet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kbtd-fleet",
        abstract: "Simulate devices that measure their keyboards and send the measurements to kbtd.",
        discussion: """
        Devices are drawn from the published keyboard-height tables (--data, else the repository's data/ folder): \
        the model mix, OS versions, keyboard languages including CJK and emoji, orientations, predictive \
        bar on and off, accessory views, iPad hardware keyboards, phones with Display Zoom, cold starts with and without pre-warming, \
        clock skew and a few broken samples. The same --seed simulates the same fleet. The last line of \
        the summary is `acknowledged SAMPLES samples in BATCHES batches`: what kbtd answered 202 for.
        """)

    @Option(help: "kbtd's base URL.")
    var url = "http://127.0.0.1:8420"

    @Option(help: "How many devices to simulate.")
    var devices = 100

    @Option(help: "Seed of the simulation: the same seed, the same fleet.")
    var seed: UInt64 = 1

    @Option(help: "Batch uploads per second across the fleet (default: unlimited).")
    var rate: Double?

    @Option(help: "Devices simulated at the same time (and HTTP connections).")
    var concurrency = 16

    @Option(help: "Directory with iphone-keyboard-heights.csv and ipad-keyboard-heights.csv.")
    var data: String?

    @Option(name: .customLong("os-shift"),
            help: "MAJOR=POINTS: every docked keyboard on that OS major is POINTS taller than the table (repeatable), e.g. 26=4; MAJOR.MINOR[:LANGUAGE]=POINTS: the same on one release, for one language, e.g. 26.2:ja-JP=+4.")
    var osShift: [String] = []

    @Option(name: .customLong("release-from"),
            help: "With a MAJOR.MINOR --os-shift: the share of the run (0-1, by device order) before the release ships; no device runs it before (those the tables put on it run the minor before).")
    var releaseFrom: Double = 0

    @Option(name: .customLong("release-share"),
            help: "With a MAJOR.MINOR --os-shift: from --release-from on, the share (0-1) of devices on that OS major that run the release. Default: the tables' own share (10% of the newest phones for 26.2).")
    var releaseShare: Double?

    @Option(name: .customLong("zoomed-share"),
            help: "Share (0-1) of each phone model's devices that run Display Zoom: they report the zoomed screen (data/display-zoom.csv) and its keyboard heights. Default: \(DisplayZoom.defaultShare); 0 turns it off. iPads have no Display Zoom.")
    var zoomedShare: Double?

    @Option(help: "Give up on undelivered batches after this many seconds.")
    var timeout: Double = 600

    func validate() throws {
        guard devices >= 1 else { throw ValidationError("--devices must be at least 1") }
        guard concurrency >= 1 else { throw ValidationError("--concurrency must be at least 1") }
        if let rate, !(rate > 0 && rate.isFinite) { throw ValidationError("--rate must be a positive number of batches per second") }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
        _ = try osShifts()
        _ = try releaseShifts()
        guard (0...1).contains(releaseFrom) else { throw ValidationError("--release-from must be a share of the run from 0 to 1, got \(releaseFrom)") }
        if let releaseShare, !(0...1).contains(releaseShare) {
            throw ValidationError("--release-share must be a share of devices from 0 to 1, got \(releaseShare)")
        }
        if (releaseFrom > 0 || releaseShare != nil), try releaseShifts().isEmpty {
            throw ValidationError("--release-from and --release-share need a release --os-shift (MAJOR.MINOR[:LANGUAGE]=POINTS)")
        }
        if let zoomedShare, !(0...1).contains(zoomedShare) {
            throw ValidationError("--zoomed-share must be a share of devices from 0 to 1, got \(zoomedShare)")
        }
        guard let parsed = URL(string: url), parsed.scheme == "http" || parsed.scheme == "https", parsed.host != nil else {
            throw ValidationError("--url must be an http(s) URL such as http://127.0.0.1:8420")
        }
    }

    func run() async throws {
        let dataDirectory = try KeyboardTable.locate(explicit: data)
        let families = try KeyboardTable.load(from: dataDirectory)
        let displayZoom = try DisplayZoom.load(from: dataDirectory, share: zoomedShare ?? DisplayZoom.defaultShare,
                                               explicit: zoomedShare != nil)
        let baseURL = URL(string: url)!
        var transport: any TelemetryTransport = URLSessionTransport(maxConnectionsPerHost: concurrency)
        try await checkReachable(baseURL, transport: transport)
        if let rate { transport = PacedTransport(transport, batchesPerSecond: rate) }

        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("kbtd-fleet-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let started = Date()
        let runner = FleetRunner(plan: FleetPlan(families: families, seed: seed, osShifts: try osShifts(), releaseShifts: try releaseShifts(),
                                                       rollout: ReleaseRollout(firstDevice: Int((releaseFrom * Double(devices)).rounded()),
                                                                               share: releaseShare),
                                                       displayZoom: displayZoom), deviceCount: devices, baseURL: baseURL,
                                 concurrency: concurrency, transport: transport, scratch: scratch,
                                 deadline: started.addingTimeInterval(timeout), now: started)
        print("kbtd-fleet: \(devices) devices, seed \(seed), \(families.count) model families from \(dataDirectory.path), sending to \(url)")
        let progress = ProgressLine.run(total: devices, started: started) { runner.progress.withLock { $0 } }
        let totals = await runner.run()
        progress?.cancel()
        _ = await progress?.value
        ProgressLine.clear()
        print(totals.summary(elapsed: Date().timeIntervalSince(started)))
        if totals.undeliveredDevices > 0 {
            FileHandle.standardError.write(Data("kbtd-fleet: \(totals.undeliveredDevices) devices still had batches queued after --timeout \(timeout) s\n".utf8))
            throw ExitCode(1)
        }
    }

    /// `--os-shift` values as OS major -> points.
    func osShifts() throws -> [Int: Double] {
        var shifts: [Int: Double] = [:]
        for value in osShift where !Self.isReleaseShift(value) {
            let parts = value.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let major = Int(parts[0]), (1...999).contains(major),
                  let points = Double(parts[1]), points.isFinite, abs(points) <= 200 else {
                throw ValidationError("--os-shift must be MAJOR=POINTS like 26=4 (|POINTS| <= 200), got '\(value)'")
            }
            shifts[major] = points
        }
        return shifts
    }

    /// `--os-shift` values for one release (`26.2=4`, `26.2:ja-JP=+4`).
    func releaseShifts() throws -> [ReleaseShift] {
        try osShift.filter(Self.isReleaseShift).map { value in
            let parts = value.split(separator: "=", maxSplits: 1)
            let target = parts[0].split(separator: ":", maxSplits: 1)
            let release = target[0].split(separator: ".")
            guard parts.count == 2, release.count == 2, let major = Int(release[0]), (1...999).contains(major),
                  let minor = Int(release[1]), (0...999).contains(minor),
                  let points = Double(parts[1]), points.isFinite, abs(points) <= 200,
                  target.count == 1 || !target[1].isEmpty else {
                throw ValidationError("--os-shift for a release must be MAJOR.MINOR[:LANGUAGE]=POINTS like 26.2:ja-JP=+4 (|POINTS| <= 200), got '\(value)'")
            }
            return ReleaseShift(major: major, minor: minor, language: target.count == 2 ? String(target[1]) : nil, points: points)
        }
    }

    /// A release shift names a minor (`26.2=4`) or a language (`26.2:ja-JP=4`); `26=4` shifts a major.
    static func isReleaseShift(_ value: String) -> Bool {
        let target = value.prefix { $0 != "=" }
        return target.contains(".") || target.contains(":")
    }

    /// Fails fast, naming the URL, when nothing answers there.
    private func checkReachable(_ baseURL: URL, transport: any TelemetryTransport) async throws {
        do {
            _ = try await transport.send(TransportRequest(method: "GET", url: baseURL.appendingPathComponent("healthz"), timeout: 10))
        } catch {
            FileHandle.standardError.write(Data("kbtd-fleet: cannot reach kbtd at \(url): \(error.localizedDescription)\n".utf8))
            throw ExitCode(69)  // EX_UNAVAILABLE
        }
    }
}
