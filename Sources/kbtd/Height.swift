import ArgumentParser
import Foundation
import KBTDCore

struct Height: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the estimate GET /v1/height would serve, computed from the database.")

    @Option(help: "Device model, e.g. iPhone17,1.") var model: String
    @Option(help: "Keyboard language, e.g. ja-JP.") var language: String
    @Option(help: "OS version, e.g. 26.1.") var os: String?
    @Option(help: "portrait (default) or landscape.") var orientation: String?
    @Option(name: .customLong("keyboard-type"), help: "UIKeyboardType name (default: default).") var keyboardType: String?
    @Option(help: "Screen in points, portrait, e.g. 393x852 (for models kbtd has no data for).") var screen: String?
    @Option(help: "SQLite database file or postgres:// URL. Default: KBTD_DATABASE, else kbtd.sqlite.") var database: String?
    @Option(help: "Config file, for min_samples and default heights (default: KBTD_CONFIG).") var config: String?
    @Option(help: "current (default: what GET /v1/height serves), before-os-aware (the chain before the OS-aware levels and the screen level), before-releases (level 1 per OS major only) or before-screen-variants (every screen answered its model's majority height).")
    var chain: ChainOption = .current

    func run() async throws {
        let parameters: [String: String?] = [
            "model": model, "language": language, "os": os, "orientation": orientation, "keyboard_type": keyboardType,
            "screen": screen,
        ]
        let query: HeightQuery
        do {
            query = try HeightQuery(parameters: { parameters[$0] ?? nil })
        } catch {
            throw fail("--\(error.field.replacingOccurrences(of: "_", with: "-")): \(error.reason)", code: ExitStatus.usage)
        }
        let (settings, index) = try await loadIndex(config: config, database: database)
        let estimate = HeightEstimator(settings: settings.estimator, chain: chain.value).estimate(query, in: index)
        print(estimate.json.serialized())
    }
}
