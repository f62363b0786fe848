import ArgumentParser
import Foundation
import KBTDCore
import KBTDReport
import KBTDServer

struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write every served estimate as one compact, versioned JSON document an app can bundle.")

    @Option(help: "SQLite database file or postgres:// URL. Default: KBTD_DATABASE, else kbtd.sqlite.") var database: String?
    @Option(help: "Write here (atomically) instead of standard output.") var output: String?
    @Option(help: "Config file, for min_samples and default heights (default: KBTD_CONFIG).") var config: String?

    func run() async throws {
        let (settings, index) = try await loadIndex(config: config, database: database)
        let document = HeightTableExport.document(index, estimator: HeightEstimator(settings: settings.estimator))
        let data = Data((document.serialized() + "\n").utf8)
        guard let output else {
            FileHandle.standardOutput.write(data)
            return
        }
        do {
            try data.write(to: URL(fileURLWithPath: output), options: .atomic)
        } catch {
            throw fail("cannot write --output \(output): \(error.localizedDescription)", code: ExitStatus.cannotCreate)
        }
    }
}
