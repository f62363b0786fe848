import ArgumentParser
import Foundation
import KBTDCore
import KBTDReport
import KBTDServer

struct Evaluate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Backtest the fallback chain on the database's own data: per basis, how far its answers are from the truth.",
        discussion: """
            Every key with enough samples is asked three times: with the key hidden, with the model's whole \
            language hidden, and with the whole model hidden (asked with its screen). Errors are absolute, in \
            points, against the key's own mode; the default_ columns score the constant on the same cases.
            """)

    @Option(help: "SQLite database file or postgres:// URL. Default: KBTD_DATABASE, else kbtd.sqlite.") var database: String?
    @Option(help: "Only cases of this device model.") var model: String?
    @Option(help: "Only cases of this keyboard language.") var language: String?
    @Option(help: "Only cases of this OS major version (26 or 26.1).") var os: String?
    @Option(help: "table, json or csv. Default: table on a terminal, json otherwise.") var format: StatsFormat?
    @Option(help: "current (default), before-os-aware (the chain before the OS-aware levels and the screen level) before-releases (level 1 per OS major only) or before-screen-variants (every screen answered its model's majority height), for comparison.") var chain: ChainOption = .current
    @Option(help: "Config file, for min_samples and default heights (default: KBTD_CONFIG).") var config: String?
    @Flag(help: "Print every case (one CSV line per answer; with --replay, per change) instead of the summary.") var cases = false
    @Flag(help: "Instead: ask every (key, OS release) with min_samples docked samples with its release, against that release's own mode, for the current chain and the chain before releases.") var releases = false
    @Flag(help: "Instead: ask every (key, reported screen) with a level's support on that screen with screen= that screen, with the key hidden and visible, against that screen's own mode, for the current chain and the chain before screen variants.") var screens = false
    @Flag(help: "Instead: replay the database's samples in time order (batch receipts, else UTC days) through the chain; per basis, samples and time from a key's height changing on a release to kbtd serving it, and the error served meanwhile.") var replay = false

    func validate() throws {
        try validateOSOption(os)
        if replay && releases { throw ValidationError("--replay cannot be combined with --releases") }
        if screens && (replay || releases) { throw ValidationError("--screens cannot be combined with --replay or --releases") }
        if screens && chain != .current {
            throw ValidationError("--screens prints the current chain and before-screen-variants: --chain does not apply")
        }
        if replay && (model != nil || language != nil || os != nil) {
            throw ValidationError("--replay replays the whole database: --model, --language and --os do not apply")
        }
    }

    func run() async throws {
        if replay { return try await runReplay() }
        let (settings, index) = try await loadIndex(config: config, database: database)
        let estimator = HeightEstimator(settings: settings.estimator, chain: chain.value)
        if releases {
            FileHandle.standardOutput.write(Data(Self.releaseTable(index, settings: settings.estimator).utf8))
            return
        }
        let filter = ChainBacktest.Filter(model: model, language: language, osMajor: os.flatMap(FieldRules.osMajor))
        let chosen = format ?? (isatty(STDOUT_FILENO) == 1 ? .table : .json)
        if screens {
            let chains = [ChainOption.current, .beforeScreenVariants].map { option in
                (chain: option.rawValue, cases: ScreenBacktest.cases(index, estimator: HeightEstimator(settings: settings.estimator,
                                                                                                        chain: option.value),
                                                                     filter: filter))
            }
            let output = self.cases ? ScreenBacktestFormatter.casesCSV(chains)
                : ScreenBacktestFormatter.render(chains.map { ($0.chain, ScreenBacktest.rows($0.cases)) }, as: chosen)
            FileHandle.standardOutput.write(Data(output.utf8))
            return
        }
        let cases = ChainBacktest.cases(index, estimator: estimator, filter: filter)
        if self.cases {
            FileHandle.standardOutput.write(Data(BacktestFormatter.casesCSV(cases).utf8))
            return
        }
        FileHandle.standardOutput.write(Data(BacktestFormatter.render(ChainBacktest.rows(cases), chain: chain.rawValue,
                                                                      as: chosen).utf8))
    }
}

extension Evaluate {
    /// `--releases`: per chain, cases on releases whose own mode differs from their key's mode over the
    /// OS major (a moved keyboard, or a thin release dominated by odd devices) and on those where it does not.
    static func releaseTable(_ index: HeightIndex, settings: EstimatorSettings) -> String {
        func pad(_ text: String, _ width: Int) -> String { text.padding(toLength: max(width, text.count), withPad: " ", startingAt: 0) }
        var lines = ["chain            differs_from_major  cases  mean_err  max_err  within_0.5  median_release_samples"]
        for chain in [ChainOption.current, .beforeReleases] {
            let estimator = HeightEstimator(settings: settings, chain: chain.value)
            for row in ReleaseBacktest.rows(ReleaseBacktest.cases(index, estimator: estimator), in: index) {
                lines.append(pad(chain.rawValue, 17) + pad(row.moved ? "yes" : "no", 19)
                             + String(format: "%5d  %8.2f  %7.1f  %9.1f%%  %22lld", row.cases, row.meanError, row.maxError,
                                      row.within * 100, row.medianSamples))
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// `--chain` of `evaluate` and `height`: the chain kbtd serves, or the one before the OS-aware levels, for comparison.
enum ChainOption: String, ExpressibleByArgument, CaseIterable {
    case current
    /// The chain before the OS-aware levels: levels 3 and 4 over any OS, no screen level.
    case beforeOSAware = "before-os-aware"
    /// The chain before point releases answered on their own: level 1 per OS major only.
    case beforeReleases = "before-releases"
    /// The chain before screen variants: every screen of a model answered its majority's height.
    case beforeScreenVariants = "before-screen-variants"

    var value: FallbackChain {
        switch self {
        case .current: .current
        case .beforeOSAware: .beforeOSAware
        case .beforeReleases: .beforeReleases
        case .beforeScreenVariants: .beforeScreenVariants
        }
    }
}
