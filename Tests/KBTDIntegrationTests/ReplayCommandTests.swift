import Foundation
import KBTDCore
import KBTDStore
import Testing

@Suite("kbtd evaluate --replay on a real database", .ownThreads, .timeLimit(.minutes(10)))
struct ReplayCommandTests {
    /// 2026-11-23 00:00 UTC.
    static let start: Int64 = 1_795_392_000

    /// A point release's fleet stored as the daemon stores it: a day of 26.1 history per model, then phones on
    /// 26.2 (ja-JP 4 pt taller) and 26.1 taking turns, one batch a minute, each with its receipt.
    static func makeDatabase(_ path: String) throws {
        let store = try SQLiteTelemetryStore(path: path)
        var batches: [PendingBatch] = []
        func add(_ os: String, _ model: String, _ language: String, _ height: Double, _ count: Int, at time: Int64) {
            var batch = releaseBatch("\(batches.count)", os: os, model: model, language: language, height: height, count: count,
                                     receivedAt: time)
            batch.delta.recordDay(receivedAt: time)
            batches.append(batch)
        }
        var time = start
        for _ in 0..<30 {
            for model in ReleaseFleet.models {
                time += 1
                add("26.1", model, "ja-JP", ReleaseFleet.base(model) + ReleaseFleet.candidateBar, 50, at: time)
                add("26.1", model, "en-US", ReleaseFleet.base(model), 50, at: time)
            }
        }
        time += 86_400
        for _ in 0..<40 {
            for model in ReleaseFleet.models {
                let old = ReleaseFleet.base(model) + ReleaseFleet.candidateBar
                time += 60
                add("26.2", model, "ja-JP", old + 4, 10, at: time)
                time += 60
                add("26.1", model, "ja-JP", old, 10, at: time)
            }
        }
        for start in stride(from: 0, to: batches.count, by: 50) {
            #expect(try store.commit(Array(batches[start..<min(start + 50, batches.count)])).stored.allSatisfy { $0 })
        }
    }

    @Test func replayFindsTheReleaseShiftWithinAFewBatchesAndTheChainBeforeReleasesNever() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("replay.sqlite").path
        try Self.makeDatabase(path)

        let current = try runKBTD(["evaluate", "--replay", "--database", path, "--format", "json"])
        #expect(current.status == 0, "\(current.stderr)")
        let document = try JSONParser.parse(Array(current.stdout.utf8))
        #expect(document["resolution"] == .string("batches"))
        let changes = try #require(document["changes"]?.array)
        // Five changes (ja-JP on 26.2, one per model), all served from the release's own data
        // within three batches of 10 of the changed key, minutes after the first one.
        #expect(changes.count == 1, "\(current.stdout)")
        #expect(changes.first?["served_from"] == .string("model+os+language") && changes.first?["release_wide"] == .bool(true))
        #expect(changes.first?["changes"] == .number(5))
        #expect((changes.first?["max_samples"]?.double ?? .infinity) <= 30)
        let seconds = changes.first?["max_seconds"]?.double ?? .infinity
        #expect(seconds > 0 && seconds <= 30 * 60)
        let served = try #require(document["served"]?.array)
        #expect(served.contains { $0["basis"] == .string("model+os+language") })

        let before = try runKBTD(["evaluate", "--replay", "--chain", "before-releases", "--database", path, "--format", "json"])
        #expect(before.status == 0, "\(before.stderr)")
        let beforeChanges = try #require(try JSONParser.parse(Array(before.stdout.utf8))["changes"]?.array)
        #expect(beforeChanges.count == 1 && beforeChanges.first?["served_from"] == .null, "\(before.stdout)")
        #expect(beforeChanges.first?["mean_abs_error_meanwhile"] == .number(4))

        let table = try runKBTD(["evaluate", "--replay", "--database", path, "--format", "table"])
        #expect(table.status == 0 && table.stdout.contains("served_from") && table.stdout.contains("model+os+language"))
        #expect(table.stdout.contains("batch receipts, to the second") && table.stdout.contains("release-wide"))
        let cases = try runKBTD(["evaluate", "--replay", "--cases", "--database", path])
        let lines = cases.stdout.split(separator: "\n")
        #expect(cases.status == 0 && lines.count == 6 && lines.dropFirst().allSatisfy { $0.contains("ja-JP") && $0.contains(",26.2,") })
    }

    @Test func replayFollowsAChangeWithNoReleaseAcrossDaysWithinTheVoteHorizon() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("ageing.sqlite").path
        do {
            // 100 samples a day at 336 for ten days, then 30 a day at 342 on the same release.
            let store = try SQLiteTelemetryStore(path: path)
            for day in 0..<30 {
                let time = Self.start + Int64(day) * 86_400 + 3_600
                var batch = releaseBatch("d\(day)", os: "26.1", language: "en-US", height: day < 10 ? 336 : 342,
                                         count: day < 10 ? 100 : 30, receivedAt: time)
                batch.delta.recordDay(receivedAt: time)
                #expect(try store.commit([batch]).stored == [true])
            }
        }
        let aged = try runKBTD(["evaluate", "--replay", "--cases", "--database", path])
        #expect(aged.status == 0, "\(aged.stderr)")
        let lines = aged.stdout.split(separator: "\n").map(String.init)
        // One change, 336 -> 342, served ten days (864,000 s) and 330 samples after it began.
        #expect(lines.count == 2 && lines[1].contains(",336.0,342.0,") && lines[1].contains(",864000,one key,model+os+language,330,"),
                "\(aged.stdout)")

        let config = directory.appendingPathComponent("kbtd.conf")
        try "vote_horizon_days = 0\n".write(to: config, atomically: true, encoding: .utf8)
        let off = try runKBTD(["evaluate", "--replay", "--cases", "--database", path, "--config", config.path])
        #expect(off.status == 0 && off.stdout.contains(",one key,not found,600,600,6.0"), "\(off.stdout)\(off.stderr)")
    }

    @Test func replayRefusesFiltersItCannotApply() throws {
        let refused = try runKBTD(["evaluate", "--replay", "--model", "iPhone17,1"])
        #expect(refused.status == 64 && refused.stderr.contains("--replay"))
        #expect(try runKBTD(["evaluate", "--replay", "--releases"]).status == 64)
    }
}
