import Foundation
import KBTDCompression
import KBTDCore
import KeyboardTelemetryClient

/// Builders shared by the client tests.
package enum ClientFixtures {
    package static let device = TelemetryDevice(model: "iPhone17,1", os: "26.1", app: "com.example.chat", appVersion: "3.2.0")

    /// A configuration for tests: quiet logs, short timeouts and backoff, state in `directory`
    /// (a `TestPaths.temporaryDirectory()` the test removes).
    package static func configuration(port: Int, directory: URL, logger: TelemetryLogger = .silent) -> TelemetryConfiguration {
        var configuration = TelemetryConfiguration(baseURL: URL(string: "http://127.0.0.1:\(port)")!,
                                                   storageDirectory: directory)
        configuration.logger = logger
        configuration.backoffBase = 0.05
        configuration.backoffMax = 0.4
        configuration.requestTimeout = 10
        return configuration
    }

    /// A docked show as an iPhone 16 Pro reports it in portrait with the QuickType bar.
    package static func show(_ index: Int = 0, language: String = "en-US", height: Double = 336, accessory: Double = 0,
                     orientation: KeyboardOrientation = .portrait, curve: Int = 7) -> KeyboardSample {
        KeyboardSample(event: index % 2 == 0 ? .show : .hide, height: height + accessory, accessoryHeight: accessory,
                       safeAreaBottom: 34, duration: 0.25, curve: curve, language: language, orientation: orientation,
                       timestamp: Date().addingTimeInterval(-Double(index)))
    }

    /// A daemon that has run once (on the port the kernel gave it) and is stopped: a client pointed
    /// at `port` first finds nothing listening, and `start()` brings the daemon back on that port.
    package static func stoppedDaemonKeepingItsPort(environment: [String: String] = [:]) throws -> (TestDaemon, port: Int) {
        let daemon = try TestDaemon(environment: environment, keepsPort: true).start()
        guard daemon.stop() == 0 else { throw HTTPTestError(description: "kbtd did not stop:\n\(daemon.log_())") }
        return (daemon, daemon.port)
    }

    /// `kbtd stats`' total sample count.
    package static func storedSamples(_ daemon: TestDaemon) throws -> Int {
        Int(try daemon.stats()["samples"]?.double ?? -1)
    }

    /// Asks `condition` of the client until it holds, for at most `seconds` (the async `waitUntil`:
    /// no thread held between questions); false, with the awaited state named, when it never did.
    package static func eventually(_ what: String, _ seconds: Double = 60, _ condition: () async throws -> Bool) async -> Bool {
        (try? await waitUntil(what, seconds: seconds, condition)) != nil
    }

    /// The `batch_id` inside a gzip batch body.
    package static func batchID(ofGzipBody body: [UInt8]) -> String? {
        guard let json = try? inflate(body), let document = try? JSONParser.parse(json) else { return nil }
        return document["batch_id"]?.string
    }

    /// Inflates with the daemon's own strict inflater (a truncated or trailing-garbage stream throws).
    package static func inflate(_ gzip: [UInt8]) throws -> [UInt8] {
        let inflater = StreamingInflater(coding: .gzip, maxOutput: 64 << 20)
        try inflater.feed(gzip)
        return try inflater.finish()
    }
}
