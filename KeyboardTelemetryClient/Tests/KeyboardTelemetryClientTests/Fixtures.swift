import Foundation
import KeyboardTelemetryClient
import KeyboardTelemetryClientTesting

/// Builders the client's tests share.
enum Fixtures {
    static let device = TelemetryDevice(model: "iPhone17,1", os: "26.1")

    /// A fresh directory under the system's temporary directory; the test removes it.
    static func temporaryDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("kbtc-\(UUID().uuidString)", isDirectory: true)
    }

    /// Quiet logs, short backoff, state in `directory`; kbtd is never really reached (the transport is a fake).
    static func configuration(directory: URL, logger: TelemetryLogger = .silent) -> TelemetryConfiguration {
        var configuration = TelemetryConfiguration(baseURL: URL(string: "http://kbtd.invalid")!, storageDirectory: directory)
        configuration.logger = logger
        configuration.backoffBase = 0.05
        configuration.backoffMax = 0.4
        return configuration
    }

    /// A docked show in portrait, `secondsAgo` before `now`.
    static func show(_ secondsAgo: Double = 0, language: String = "en-US", height: Double = 336,
                     now: Date = Date()) -> KeyboardSample {
        KeyboardSample(event: .show, height: height, safeAreaBottom: 34, language: language, orientation: .portrait,
                       timestamp: now.addingTimeInterval(-secondsAgo))
    }

    /// A transport that answers batches 202 and everything else 404.
    static func accepting() -> ScriptedTransport {
        ScriptedTransport { request in ScriptedTransport.accept(request) }
    }

    /// A transport whose every attempt fails like a refused connection.
    static func refusing() -> ScriptedTransport {
        ScriptedTransport { _ in throw ScriptedTransport.ConnectionRefused() }
    }
}

/// Asks `condition` until it holds, for at most `seconds` of real time (a bound, not a measurement).
func eventually(_ seconds: Double = 30, _ condition: () async -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if await condition() { return true }
        try? await Task.sleep(nanoseconds: 5_000_000)
    }
    return await condition()
}

/// The files in the queue directory under `directory`.
func queueFiles(_ directory: URL) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("queue").path)) ?? []).sorted()
}
