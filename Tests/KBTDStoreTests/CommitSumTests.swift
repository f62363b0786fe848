import Foundation
import KBTDCore
@testable import KBTDStore
import Testing

/// A group commit sums its new batches' counts in one pass (`CommitPlan.settle`,
/// `AggregateDelta(summing:)`) where it merged them one by one. Random groups, with ids repeated
/// inside a group and retried across groups, must settle to what the merge one by one gave, and
/// leave the rows a commit of one batch at a time leaves.
@Suite("A group commit's sum of its batches", .ownThreads)
struct CommitSumTests {
    static let models = ["iPhone17,1", "iPhone16,2", "iPhone14,6"]
    static let languages = ["en-US", "ja-JP", "zh-Hans", "de-DE", "emoji"]

    /// Groups of random batches: trusted or from one of five networks, a few keys each, some with a
    /// screen, releases and days; some ids repeated inside their group, some retried from earlier groups.
    static func groups(seed: UInt64, count: Int = 8) -> [[PendingBatch]] {
        var random = SplitMix64(seed: seed)
        var sent: [PendingBatch] = []
        var groups: [[PendingBatch]] = []
        for g in 0..<count {
            var group: [PendingBatch] = []
            for b in 0..<(1 + Int(random.next() % 30)) {
                if !group.isEmpty && random.next() % 8 == 0 {
                    group.append(group[Int(random.next() % UInt64(group.count))])  // the same id twice in one commit
                    continue
                }
                if !sent.isEmpty && random.next() % 8 == 0 {
                    group.append(sent[Int(random.next() % UInt64(sent.count))])  // a retry of a stored id
                    continue
                }
                let heights = (0..<(1 + Int(random.next() % 12))).map { _ in 280 + Double(random.next() % 30) / 2 }
                let source: SourceID = random.next() % 3 == 0 ? .trusted : SourceID(network: "198.51.100.\(random.next() % 5)")
                var batch = pendingBatch("g\(g)-b\(b)", receivedAt: 1_000 + Int64(g) * 40_000 + Int64(b),
                                         model: models[Int(random.next() % UInt64(models.count))],
                                         language: languages[Int(random.next() % UInt64(languages.count))], heights: heights,
                                         source: source, screen: random.next() % 4 == 0 ? ScreenSize(width: 390, height: 844) : nil)
                batch.delta.recordRelease(os: "26.\(random.next() % 3)")
                batch.delta.recordDay(receivedAt: batch.receivedAt)
                group.append(batch)
            }
            sent += group
            groups.append(group)
        }
        return groups
    }

    @Test func aPlanSettlesToTheMergeOfItsNewBatchesOneByOne() {
        for seed in 1...40 as ClosedRange<UInt64> {
            var random = SplitMix64(seed: seed &* 977)
            for group in Self.groups(seed: seed, count: 3) {
                var plan = CommitPlan(group)
                // The store claimed a random part of the ids (the rest it had already).
                let claimed = Set(plan.claims.map(\.batchID).filter { _ in random.next() % 4 != 0 })
                plan.settle(claimed: claimed)
                // The former settle: each id's first occurrence, if claimed, merged in turn into the first.
                var seen: Set<String> = []
                var stored: [Bool] = []
                var merged: AggregateDelta?
                var trusted: Set<SeriesKey> = []
                for batch in group {
                    let isNew = claimed.contains(batch.batchID) && seen.insert(batch.batchID).inserted
                    stored.append(isNew)
                    guard isNew else { continue }
                    if merged == nil { merged = batch.delta } else { merged!.merge(batch.delta) }
                    if batch.source == .trusted { trusted.formUnion(batch.delta.seriesKeys) }
                }
                let reference = merged ?? AggregateDelta()
                #expect(plan.stored == stored, "seed \(seed)")
                #expect(plan.added == reference, "seed \(seed): \(group.count) batches")
                #expect(plan.addedKeys == reference.seriesKeys)
                #expect(plan.trustedKeys == trusted)
            }
        }
    }

    /// `settle(taken:)` (the SQLite store's: one answer a claim, in `claims`' order) settles as
    /// `settle(claimed:)` with the set of the ids taken, ids repeated in the commit and retried included.
    @Test func settlingFromEachClaimsAnswerIsSettlingFromTheSetOfIDsTaken() {
        for seed in 1...40 as ClosedRange<UInt64> {
            var random = SplitMix64(seed: seed &* 131)
            for group in Self.groups(seed: seed, count: 3) {
                var byAnswer = CommitPlan(group)
                var bySet = byAnswer
                let taken = byAnswer.claims.map { _ in random.next() % 4 != 0 }
                byAnswer.settle(taken: taken)
                bySet.settle(claimed: Set(zip(bySet.claims, taken).filter(\.1).map(\.0.batchID)))
                #expect(byAnswer.stored == bySet.stored, "seed \(seed)")
                #expect(byAnswer.stored.filter { $0 }.count == taken.filter { $0 }.count)
                #expect(byAnswer.added == bySet.added)
                #expect(byAnswer.addedKeys == bySet.addedKeys && byAnswer.trustedKeys == bySet.trustedKeys)
            }
        }
    }

    /// Every table's rows, but the columns that hold a commit's time (a group commit's is its latest
    /// batch's receipt, a commit of one batch that batch's), each value through `quote()`, sorted.
    static func rows(_ store: SQLiteTelemetryStore) throws -> [String: [String]] {
        let commitTimes: Set<String> = ["seen_at", "first_seen", "last_seen", "admitted_at"]
        var tables: [String] = []
        try store.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name <> 'schema_migrations' ORDER BY name")
            .forEachRow { tables.append($0.text(0)) }
        var rows: [String: [String]] = [:]
        for table in tables {
            var columns: [String] = []
            try store.db.prepare("SELECT name FROM pragma_table_info('\(table)')").forEachRow { columns.append($0.text(0)) }
            columns.removeAll(where: commitTimes.contains)
            var values: [String] = []
            let select = "SELECT " + columns.map { "quote(\"\($0)\")" }.joined(separator: " || ',' || ") + " FROM \"\(table)\""
            try store.db.prepare(select).forEachRow { values.append($0.text(0)) }
            rows[table] = values.sorted()
        }
        return rows
    }

    @Test func groupCommitsStoreTheRowsOfCommitsOfOneBatch() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for seed in [11, 12, 13] as [UInt64] {
            let groups = Self.groups(seed: seed)
            let grouped = try SQLiteTelemetryStore(path: directory.appendingPathComponent("grouped-\(seed).sqlite").path)
            let single = try SQLiteTelemetryStore(path: directory.appendingPathComponent("single-\(seed).sqlite").path)
            var groupedStored: [Bool] = [], singleStored: [Bool] = []
            for group in groups {
                groupedStored += try grouped.commit(group).stored
                for batch in group { singleStored += try single.commit([batch]).stored }
            }
            #expect(groupedStored == singleStored, "seed \(seed)")
            #expect(groupedStored.contains(false) && groupedStored.contains(true), "seed \(seed): retries and new batches both")
            let (a, b) = (try Self.rows(grouped), try Self.rows(single))
            #expect(Set(a.keys) == Set(b.keys))
            for table in a.keys.sorted() {
                #expect(a[table] == b[table], "seed \(seed): table \(table) differs")
            }
            #expect(try #require(a["height_counts"]).count > 20 && !(try #require(a["release_sources"])).isEmpty)
        }
    }
}
