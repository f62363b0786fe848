import Foundation
import KBTDCore
import KBTDStore
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("Crash consistency and storage faults", .ownThreads, .timeLimit(.minutes(10)))
struct CrashConsistencyTests {
    /// Rounds of kill -9 under concurrent ingest (KBTD_CRASH_ROUNDS overrides 20).
    static let rounds = Int(ProcessInfo.processInfo.environment["KBTD_CRASH_ROUNDS"] ?? "") ?? 20

    @Test func killNineAtRandomMomentsLosesNothingAndCountsNothingTwice() throws {
        let daemon = TestDaemon()
        var generator = SplitMix64(seed: 99)
        let languages = ["en-US", "ja-JP", "de-DE", "emoji"]
        struct Batch {
            var body: [UInt8]
            var language: String
            var samples: Int
        }
        var pending: [Batch] = []  // not yet acknowledged
        var acknowledged: [Batch] = []
        var nextSequence = 0
        func makeBatches(_ count: Int) -> [Batch] {
            (0..<count).map { _ in
                nextSequence += 1
                let language = languages[Int(generator.next() % 4)]
                let samples = 1 + Int(generator.next() % 20)
                return Batch(body: gzip(batchBody(samples: shows(samples, height: 300 + Double(generator.next() % 50), language: language))),
                             language: language, samples: samples)
            }
        }
        var killsDuringLoad = 0
        for round in 0..<Self.rounds {
            try daemon.start()
            // Everything not acknowledged so far is re-sent, plus new batches and a sample of acknowledged ones.
            let resent = acknowledged.isEmpty ? [] : (0..<5).map { _ in acknowledged[Int(generator.next() % UInt64(acknowledged.count))] }
            let work = pending + makeBatches(150)
            // The kill lands after a random number of acknowledgements (0: before the first request):
            // an event the workers report, so a slow machine moves it in time, never out of the load.
            let killAfter = Int(generator.next() % 80)
            let acks = ConcurrentResults<Int>()
            let duplicates = ConcurrentResults<Int>()
            let victim = try #require(daemon.process?.processIdentifier)
            acks.onCount(killAfter) { kill(victim, SIGKILL) }  // this round's daemon, never a later one
            let jobs = work.map(\.body) + resent.map(\.body)
            let workCount = work.count
            DispatchQueue.concurrentPerform(iterations: 6) { worker in
                for i in stride(from: worker, to: jobs.count, by: 6) {
                    guard let response = try? daemon.post(jobs[i], encoding: "gzip") else { continue }
                    if response.status == 202 && i < workCount { acks.append(i) }
                    if response.status == 200 { duplicates.append(i) }
                    if response.status == 202 && i >= workCount { acks.append(-1) }  // a re-sent acknowledged batch stored twice
                }
            }
            if !daemon.hasExited { kill(victim, SIGKILL) }  // fewer acknowledgements than `killAfter`: after the load
            let exitStatus = daemon.waitForExit()
            #expect(exitStatus == SIGKILL, "round \(round): the daemon ended on its own (status \(exitStatus))\n\(daemon.log_())")
            #expect(!acks.values.contains(-1), "round \(round): an acknowledged batch was stored again")
            let acked = Set(acks.values)
            let duplicateSet = Set(duplicates.values)
            if acked.count + duplicateSet.filter({ $0 < workCount }).count < workCount { killsDuringLoad += 1 }
            // A 200 for a batch of `work` means an earlier round stored it without our seeing the 202.
            for (i, batch) in work.enumerated() {
                if acked.contains(i) || duplicateSet.contains(i) { acknowledged.append(batch) }
            }
            pending = work.enumerated().filter { !acked.contains($0.offset) && !duplicateSet.contains($0.offset) }.map(\.element)
        }
        #expect(killsDuringLoad >= Self.rounds / 4, "kills should often land mid-load (\(killsDuringLoad) of \(Self.rounds))")

        // Final round: deliver everything still pending; every acknowledged batch must be a duplicate.
        try daemon.start()
        for batch in pending {
            let status = try daemon.post(batch.body, encoding: "gzip").status
            #expect(status == 202 || status == 200)
            acknowledged.append(batch)
        }
        for batch in acknowledged.prefix(200) {
            #expect(try daemon.post(batch.body, encoding: "gzip").status == 200)
        }
        let stats = try daemon.stats()
        let expectedTotal = acknowledged.reduce(0) { $0 + $1.samples }
        #expect(stats["samples"] == .number(Double(expectedTotal)), "stored samples must equal the distinct batches' samples")
        for language in languages {
            let expected = acknowledged.filter { $0.language == language }.reduce(0) { $0 + $1.samples }
            #expect(statsRow(stats, model: "iPhone17,1", language: language)?["samples"] == .number(Double(expected)))
        }
        #expect(daemon.stop() == 0)
        #expect(try SQLiteTelemetryStore(path: daemon.database).integrityCheck() == "ok")
        print("crash consistency: \(Self.rounds) kill -9 rounds (\(killsDuringLoad) mid-load), \(acknowledged.count) distinct batches, \(expectedTotal) samples, 0 lost, 0 double-counted")
    }

    static let isRoot = getuid() == 0

    /// Mounts a small tmpfs for the database (needs root), unmounted on return.
    static func withSmallFileSystem(_ body: (URL) throws -> Void) throws {
        let mountPoint = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: mountPoint) }
        #expect(runTool("mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", mountPoint.path]) == 0)
        defer { _ = runTool("umount", ["-l", mountPoint.path]) }
        try body(mountPoint)
    }

    @discardableResult
    static func runTool(_ tool: String, _ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }

    @Test(.enabled(if: isRoot, "mounting a size-limited tmpfs needs root"))
    func diskFullAnswers503AndRecoversWhenSpaceReturns() throws {
        try Self.withSmallFileSystem { mount in
            let database = mount.appendingPathComponent("kbtd.sqlite").path
            let daemon = try TestDaemon(database: database).start()
            #expect(try daemon.post(gzip(batchBody(samples: shows(20, height: 336))), encoding: "gzip").status == 202)
            let before = try daemon.stats()

            // Fill the file system to the last byte.
            let filler = mount.appendingPathComponent("filler").path
            _ = Self.runTool("dd", ["if=/dev/zero", "of=\(filler)", "bs=64k"])
            var refused = 0
            for _ in 0..<10 {
                let response = try daemon.post(gzip(batchBody(samples: shows(200, height: 336))), encoding: "gzip")
                #expect(response.status == 503 || response.status == 202)
                if response.status == 503 {
                    refused += 1
                    #expect(response.header("retry-after") != nil)
                }
            }
            #expect(refused > 0, "a full disk must refuse batches")
            #expect(try daemon.get("/healthz").status == 503)
            #expect(try daemon.get("/readyz").json?["error"]?.string?.hasPrefix("database not writable") == true)
            #expect(daemon.process?.isRunning == true)

            // Space returns: ingest recovers without a restart.
            try FileManager.default.removeItem(atPath: filler)
            var status = 0
            try daemon.until("a batch accepted once space returned (the writer reopens the database)") {
                status = try daemon.post(gzip(batchBody(samples: shows(5, height: 336))), encoding: "gzip").status
                return status == 202
            }
            #expect(status == 202)
            #expect(try daemon.get("/healthz").status == 200)
            let after = try daemon.stats()
            #expect(after["samples"]!.double! >= before["samples"]!.double! + 5)
            #expect(daemon.stop() == 0)
            #expect(try SQLiteTelemetryStore(path: database).integrityCheck() == "ok")
        }
    }

    @Test(.enabled(if: isRoot, "remounting read-only needs root"))
    func readOnlyDatabaseAnswers503AndRecovers() throws {
        try Self.withSmallFileSystem { mount in
            let database = mount.appendingPathComponent("kbtd.sqlite").path
            let daemon = TestDaemon(database: database)
            try daemon.start()
            #expect(try daemon.post(gzip(batchBody(samples: shows(25, height: 336))), encoding: "gzip").status == 202)
            #expect(daemon.stop() == 0)

            // The file system goes read-only (as after an I/O error); kbtd starts anyway.
            #expect(Self.runTool("mount", ["-o", "remount,ro", mount.path]) == 0)
            try daemon.start()
            let refused = try daemon.post(gzip(batchBody(samples: shows(3, height: 336))), encoding: "gzip")
            #expect(refused.status == 503)
            #expect(refused.header("retry-after") != nil)
            #expect(try daemon.get("/healthz").status == 503)
            let unready = try daemon.get("/readyz")
            #expect(unready.status == 503)
            #expect(unready.json?["error"]?.string?.hasPrefix("database not writable") == true, "\(unready.text)")
            #expect(unready.header("retry-after") != nil)
            // What was stored is still served.
            #expect(try daemon.get("/v1/height?model=iPhone17,1&language=en-US").json?["samples"] == .number(25))

            // Writable again: ingest recovers without a restart.
            #expect(Self.runTool("mount", ["-o", "remount,rw", mount.path]) == 0)
            var status = 0
            try daemon.until("a batch accepted once the file system is writable again") {
                status = try daemon.post(gzip(batchBody(samples: shows(3, height: 336))), encoding: "gzip").status
                return status == 202
            }
            #expect(status == 202)
            #expect(try daemon.get("/healthz").status == 200)
            #expect(try daemon.get("/readyz").status == 200)
            #expect(try daemon.stats()["samples"] == .number(28))
            #expect(daemon.stop() == 0)
            #expect(try SQLiteTelemetryStore(path: database).integrityCheck() == "ok")
        }
    }
}
