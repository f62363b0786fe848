import Foundation
import KBTDCore
import KBTDStore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `kbtd backup` against a daemon that keeps ingesting, and `kbtd check` on what it wrote and on
/// files it must refuse. Every batch is a key of its own (its own model), so a batch in a copy
/// is either wholly there (its id and all its samples) or wholly absent.
@Suite("backup and check", .ownThreads, .timeLimit(.minutes(10)))
struct BackupTests {
    static let samplesPerBatch = 20

    static func model(_ index: Int) -> String { "Backup\(index),1" }

    static func body(_ index: Int) -> [UInt8] {
        gzip(batchBody(id: batchID(index), model: model(index), samples: shows(samplesPerBatch, height: 336)))
    }

    /// A batch's id from its index (a UUID's shape, the index in its last group).
    static func batchID(_ index: Int) -> String {
        "00000000-0000-4000-8000-" + String(format: "%012d", index)
    }

    /// Posts batches `0, 1, 2, ...` until `stop` is set; the indexes acknowledged with 202 land in `acknowledged`.
    final class Ingest: @unchecked Sendable {  // `stopped` is guarded by `lock`; the thread is joined through `done`
        let acknowledged = ConcurrentResults<Int>()
        private let lock = NSLock()
        private var stopped = false
        private let done = DispatchSemaphore(value: 0)

        init(_ daemon: TestDaemon) {
            Thread { [self] in
                var index = 0
                while !lock.withLock({ stopped }) {
                    if (try? daemon.post(BackupTests.body(index), encoding: "gzip").status) == 202 { acknowledged.append(index) }
                    index += 1
                }
                done.signal()
            }.start()
        }

        func stop() {
            lock.withLock { stopped = true }
            done.wait()
        }
    }

    @Test func backupWhileIngestingHoldsEveryAcknowledgedBatchWholeAndServes() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let daemon = try TestDaemon().start()
        let copies = directory.appendingPathComponent("copies")
        try FileManager.default.createDirectory(at: copies, withIntermediateDirectories: true)
        let copy = copies.appendingPathComponent("kbtd-copy.sqlite").path

        let ingest = Ingest(daemon)
        let started = DispatchSemaphore(value: 0)
        ingest.acknowledged.onCount(100) { started.signal() }
        started.wait()
        // Acknowledged before the backup starts: each must be in the copy.
        let before = Set(ingest.acknowledged.values)
        let backup = try runKBTD(["backup", "--database", daemon.database, copy])
        let duringBackup = ingest.acknowledged.values.count
        ingest.stop()
        #expect(backup.status == 0, "\(backup.stderr)")
        #expect(backup.stdout.contains("backed up \(daemon.database) to \(copy)"), "\(backup.stdout)")
        #expect(backup.stdout.contains("source key not copied"), "\(backup.stdout)")
        #expect(!FileManager.default.fileExists(atPath: copies.appendingPathComponent("source.key").path))
        #expect(!FileManager.default.fileExists(atPath: copy + ".partial"))
        var info = stat()
        #expect(stat(copy, &info) == 0 && info.st_mode & 0o777 == 0o600)

        let store = try SQLiteTelemetryStore(path: copy, access: .readOnly)
        var samplesByModel: [String: Int64] = [:]
        for (key, count) in try store.loadCounts().animations { samplesByModel[key.series.model, default: 0] += count }
        var idsInCopy = Set<String>()
        try store.forEachBatchIDs { ids in idsInCopy.formUnion(ids.map(\.batchID)) }
        for index in before {
            #expect(samplesByModel[Self.model(index)] == Int64(Self.samplesPerBatch), "acknowledged batch \(index) is not whole in the copy")
            #expect(idsInCopy.contains(Self.batchID(index)), "acknowledged batch \(index)'s id is not in the copy")
        }
        // No batch partly: every model in the copy has all its samples and its batch id, and every id its samples.
        for (model, samples) in samplesByModel {
            #expect(samples == Int64(Self.samplesPerBatch), "\(model) is in the copy partly: \(samples) samples")
        }
        #expect(idsInCopy.count == samplesByModel.count, "batch ids and batches' keys disagree in the copy")
        #expect(samplesByModel.count >= before.count && samplesByModel.count <= duringBackup + 1)

        let check = try runKBTD(["check", copy, "--format", "json"])
        #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
        let report = try JSONParser.parse(Array(check.stdout.utf8))
        #expect(report["verdict"] == .string("sound"))
        #expect(report["counts"]?["batch_ids"] == .number(Double(idsInCopy.count)))
        #expect(report["counts"]?["samples"] == .number(Double(idsInCopy.count * Self.samplesPerBatch)))
        #expect(daemon.stop() == 0)

        // The copy serves: an acknowledged key's own estimate, from its own samples.
        let served = try TestDaemon(database: copy).start()
        let key = try #require(before.min())
        let answer = try served.get("/v1/height?model=\(Self.model(key))&language=en-US")
        #expect(answer.status == 200)
        #expect(answer.json?["samples"] == .number(Double(Self.samplesPerBatch)), "\(answer.text)")
        #expect(answer.json?["height"] == .number(336))
        #expect(served.stop() == 0)
        // Served without the key, the copy got a new one beside it.
        #expect(FileManager.default.fileExists(atPath: copies.appendingPathComponent("source.key").path))
    }

    @Test func backupRefusesAnExistingDestinationAndPostgresAndCopiesTheKeyOnlyWhenAsked() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let daemon = try TestDaemon().start()
        #expect(try daemon.post(Self.body(1), encoding: "gzip").status == 202)
        let withKey = directory.appendingPathComponent("with-key")
        try FileManager.default.createDirectory(at: withKey, withIntermediateDirectories: true)
        let copy = withKey.appendingPathComponent("kbtd.sqlite").path

        let first = try runKBTD(["backup", "--database", daemon.database, "--with-source-key", copy])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("source key copied to"), "\(first.stdout)")
        let originalKey = FileManager.default.contents(atPath: DatabaseFile.parent(of: daemon.database) + "/source.key")
        let copiedKey = withKey.appendingPathComponent("source.key").path
        #expect(originalKey != nil && FileManager.default.contents(atPath: copiedKey) == originalKey)
        var info = stat()
        #expect(stat(copiedKey, &info) == 0 && info.st_mode & 0o777 == 0o600)

        // An existing DEST is never overwritten (exit 73), and stays as it was.
        let sizeBefore = try FileManager.default.attributesOfItem(atPath: copy)[.size] as? Int
        #expect(try daemon.post(Self.body(2), encoding: "gzip").status == 202)
        let again = try runKBTD(["backup", "--database", daemon.database, copy])
        #expect(again.status == 73)
        #expect(again.stderr.contains("\(copy) already exists"), "\(again.stderr)")
        #expect(try FileManager.default.attributesOfItem(atPath: copy)[.size] as? Int == sizeBefore)

        let missing = try runKBTD(["backup", "--database", directory.appendingPathComponent("none.sqlite").path,
                                   directory.appendingPathComponent("x.sqlite").path])
        #expect(missing.status == 66)
        let postgres = try runKBTD(["backup", "--database", "postgres://kbtd@localhost/kbtd", directory.appendingPathComponent("pg").path])
        #expect(postgres.status == 64)
        #expect(postgres.stderr.contains("pg_dump"), "\(postgres.stderr)")
        #expect(daemon.stop() == 0)
    }

    @Test func checkTellsSoundCorruptForeignAndMissingFilesApart() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let daemon = try TestDaemon().start()
        for index in 0..<60 { #expect(try daemon.post(Self.body(index), encoding: "gzip").status == 202) }
        let good = directory.appendingPathComponent("good.sqlite").path
        #expect(try runKBTD(["backup", "--database", daemon.database, good]).status == 0)
        #expect(daemon.stop() == 0)

        let sound = try runKBTD(["check", good])
        #expect(sound.status == 0, "\(sound.stdout) \(sound.stderr)")
        #expect(sound.stdout.contains("verdict: sound"), "\(sound.stdout)")
        #expect(sound.stdout.contains("batch_ids: 60"), "\(sound.stdout)")
        #expect(try runKBTD(["check", "--database", good, "--format", "json"]).status == 0)

        // The middle third of a copy overwritten: SQLite's pages there no longer hold what they say.
        let corrupt = directory.appendingPathComponent("corrupt.sqlite").path
        var bytes = try #require(FileManager.default.contents(atPath: good))
        let third = bytes.count / 3
        bytes.replaceSubrange(third..<(2 * third), with: [UInt8](repeating: 0xA5, count: third))
        try bytes.write(to: URL(fileURLWithPath: corrupt))
        let damaged = try runKBTD(["check", corrupt, "--format", "json"])
        #expect(damaged.status == 65, "\(damaged.stdout) \(damaged.stderr)")
        #expect(try JSONParser.parse(Array(damaged.stdout.utf8))["verdict"] == .string("corrupt"), "\(damaged.stdout)")

        // Another application's SQLite file, and a file that is not SQLite at all.
        let foreign = directory.appendingPathComponent("foreign.sqlite").path
        let made = try runToEnd("/usr/bin/env", ["python3", "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('CREATE TABLE notes(x)'); c.commit()", foreign],
            timeout: 60)
        #expect(made.status == 0, "\(made.stderr)")
        let notOurs = try runKBTD(["check", foreign, "--format", "json"])
        #expect(notOurs.status == 65)
        #expect(try JSONParser.parse(Array(notOurs.stdout.utf8))["verdict"] == .string("not_kbtd"), "\(notOurs.stdout)")
        let text = directory.appendingPathComponent("notes.txt").path
        try "not a database, just some text that is long enough to be read as a header".write(toFile: text, atomically: true, encoding: .utf8)
        let garbage = try runKBTD(["check", text])
        #expect(garbage.status == 65)
        #expect(garbage.stdout.contains("NOT A KBTD DATABASE"), "\(garbage.stdout)")

        let missing = try runKBTD(["check", directory.appendingPathComponent("absent.sqlite").path])
        #expect(missing.status == 66)
        #expect(missing.stderr.contains("does not exist"))
    }
}
