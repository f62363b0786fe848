import ArgumentParser
import Foundation
import KBTDCore
import KBTDStore

/// What one SQLite group commit costs in statements and rows: the same decoded workload
/// batches (100 samples each, every batch tagged with one of two OS releases) committed in
/// groups to a fresh database, once per layout, alternating in each round:
///
/// - `key sources only`: the batches without their per-release sources (no `release_sources` rows);
/// - `kbtd's commit`: what kbtd runs;
/// - `time-ordered batch ids`: the same with the batch ids replaced by ids that sort in the order
///   they arrive (as UUIDv7 would): an experiment, to show what the random ids' B-tree leaves cost.
///
/// Choices inside the commit (multi-row upserts, known rows skipped) are compared as two builds
/// of kbtd-bench, not by switches in the store.
///
/// Statements are `SQLITE_STMTSTATUS_RUN` summed over the store's cached statements (the
/// transaction's BEGIN and COMMIT are not among them), rows `sqlite3_total_changes`, CPU the
/// thread's, wall the commit's whole time (the fsync of `synchronous=FULL` included), WAL bytes
/// the frames the commits wrote (`countWALFrames`: page and header, the auto-checkpoint as SQLite's).
struct Commit: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Statements and rows per SQLite group commit, in-process.")
    @Option var batches = 2_000
    @Option var group = 32
    @Option var rounds = 3
    @Option var seed: UInt64 = 1
    @Option(help: "Distinct client networks of the untrusted batches.") var networks = 64
    @Flag(help: "Batches from 64 untrusted networks (capped votes) instead of a trusted peer.") var untrusted = false
    @Option(help: "Only these layouts (repeatable): sources, kbtd, orderedids.") var layout: [Layout] = []
    @Option(help: "The new databases' page size (SQLite's 4096 by default).") var pageSize: Int?

    enum Layout: String, CaseIterable, ExpressibleByArgument {
        case keySourcesOnly = "sources"
        case kbtd = "kbtd"
        case orderedIDs = "orderedids"

        var name: String {
            switch self {
            case .keySourcesOnly: "key sources only"
            case .kbtd: "kbtd's commit"
            case .orderedIDs: "time-ordered batch ids"
            }
        }
    }

    func run() throws {
        var workload = Workload(seed: seed)
        let now = Date().timeIntervalSince1970
        let rules = FieldRules()
        var policy = SourcePolicy()
        let sourceKey = SourceKey(k0: 7, k1: 11)
        var pending: [PendingBatch] = []
        for i in 0..<batches {
            let batch = try BatchIntake.validate(json: workload.batchJSON(now: now), now: now, rules: rules)
            var item = PendingBatch(batch, receivedAt: Int64(now) + Int64(i / 500))
            if untrusted {
                let network = "198.51.\(i % networks / 256).\(i % networks % 256)"
                item.source = SourceID(network: network, key: sourceKey)
                item.ledger = policy.apply(to: &item.delta, source: item.source, now: now)
            }
            item.delta.recordRelease(os: i % 3 == 0 ? "26.2" : "26.1")
            item.delta.recordDay(receivedAt: item.receivedAt)
            pending.append(item)
        }
        let groups = stride(from: 0, to: pending.count, by: group).map { Array(pending[$0..<min($0 + group, pending.count)]) }
        let ordinal = Dictionary(pending.enumerated().map { ($1.batchID, $0) }, uniquingKeysWith: { first, _ in first })
        let layouts = layout.isEmpty ? Layout.allCases : Layout.allCases.filter(layout.contains)
        var results: [Layout: [(statements: Double, rows: Double, cpu: Double, wall: Double, walBytes: Double)]] = [:]
        for _ in 0..<rounds {
            for layout in layouts {
                let directory = FileManager.default.temporaryDirectory.appendingPathComponent("kbtd-bench-commit-\(UUID().uuidString)")
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: directory) }
                let store = try SQLiteTelemetryStore(path: directory.appendingPathComponent("kbtd.sqlite").path,
                                                     admission: { IndexAdmission(minSources: 3, maxIndexedKeys: 1_000_000) },
                                                     pageSize: pageSize)
                let wal = try store.countWALFrames()
                let start = store.statementRuns
                let cpuStart = threadCPU()
                let wallStart = DispatchTime.now().uptimeNanoseconds
                for var commit in groups {
                    if layout == .keySourcesOnly {
                        for i in commit.indices { commit[i].delta.releaseSources = [:] }
                    }
                    if layout == .orderedIDs {
                        for i in commit.indices {
                            commit[i].batchID = String(format: "%08x-%04x-7000-8000-000000000000", commit[i].receivedAt, ordinal[commit[i].batchID]!)
                        }
                    }
                    _ = try store.commit(commit)
                }
                let cpu = threadCPU() - cpuStart
                let wall = Double(DispatchTime.now().uptimeNanoseconds - wallStart) / 1e9
                let end = store.statementRuns
                let count = Double(groups.count)
                results[layout, default: []].append((Double(end.statements - start.statements) / count,
                                                     Double(end.rowsChanged - start.rowsChanged) / count,
                                                     cpu * 1e6 / count, wall * 1e6 / count, Double(wal.bytes) / Double(batches)))
            }
        }
        print("commit: \(batches) batches of 100 samples in groups of \(group), \(untrusted ? "\(networks) untrusted networks" : "trusted"), \(rounds) rounds (medians)")
        for layout in layouts {
            let runs = results[layout]!
            func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
            let name = layout.name.padding(toLength: 40, withPad: " ", startingAt: 0)
            print(name + String(format: " %7.1f statements/commit  %7.1f rows changed/commit  %8.0f CPU µs/commit  %8.0f wall µs/commit  %7.0f WAL bytes/batch",
                                median(runs.map(\.statements)), median(runs.map(\.rows)), median(runs.map(\.cpu)),
                                median(runs.map(\.wall)), median(runs.map(\.walBytes))))
        }
    }

    private func threadCPU() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
