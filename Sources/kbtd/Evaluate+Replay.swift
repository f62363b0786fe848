import ArgumentParser
import Foundation
import KBTDCore
import KBTDReport
import KBTDServer
import KBTDStore

extension Evaluate {
    /// `--replay`: the database's admitted counts in the finest time order it keeps (`ReplayTimeline`),
    /// fed through the estimator of `--chain`; batch receipts are read from an SQLite database
    /// (the reader `kbtd migrate` uses); a PostgreSQL database replays by UTC day.
    func runReplay() async throws {
        var flags: [String: String] = [:]
        if let database { flags["database"] = database }
        let settings = try resolveSettings(config: config, flags: flags)
        let store = try await openStore(settings.database)
        let counts: AggregateDelta
        var receipts: [ReplayTimeline.Receipt] = []
        do {
            counts = try await store.loadIndexCounts()
            try (store as? SQLiteTelemetryStore)?.forEachBatchIDs { batch in
                receipts += batch.map { ReplayTimeline.Receipt(receivedAt: $0.receivedAt, model: $0.model, os: $0.os,
                                                                accepted: $0.accepted) }
            }
        } catch {
            throw fail("cannot read database \(loggableDatabase(settings.database)): \(error)", code: ExitStatus.noInput)
        }
        let timeline = ReplayTimeline(counts: counts, receipts: receipts, minSamples: settings.estimator.minSamples)
        let result = Replay.run(timeline, estimator: HeightEstimator(settings: settings.estimator, chain: chain.value))
        if cases {
            FileHandle.standardOutput.write(Data(ReplayFormatter.changesCSV(result.changes).utf8))
            return
        }
        let chosen = format ?? (isatty(STDOUT_FILENO) == 1 ? .table : .json)
        FileHandle.standardOutput.write(Data(ReplayFormatter.render(result, chain: chain.rawValue, resolution: timeline.resolution,
                                                                    as: chosen).utf8))
    }
}
