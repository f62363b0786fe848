import Foundation
import KBTDCore
@testable import KBTDStore
import KBTDTestSupport
import Testing

/// The daemon's writer (`SQLiteTelemetryStore(deferredSync:)`) leaves the log's checkpoints to a
/// thread of their own (`WALCheckpointer`): its commits copy nothing into the database file, the
/// thread does, and the writer's last checkpoint of a long log lets the log start over.
@Suite("Checkpoints on a thread of their own", .ownThreads, .timeLimit(.minutes(10)))
struct WALCheckpointerTests {
    /// A group of batches with random ids (each claims a row of the batch index) over a few keys.
    static func group(_ number: Int, size: Int = 200) -> [PendingBatch] {
        (0..<size).map { index in
            pendingBatch(UUID().uuidString.lowercased(), receivedAt: 1_000 + Int64(number),
                         model: ["iPhone17,1", "iPhone16,2", "iPhone14,6"][index % 3],
                         language: ["en-US", "ja-JP", "de-DE", "fr-FR"][number % 4], heights: [336, 291, 345])
        }
    }

    /// Batch ids in the database file alone: SQLite's `immutable=1` reads the file and ignores the log.
    static func idsInDatabaseFile(_ path: String) throws -> Int64 {
        let file = try SQLiteConnection(path: path, mode: .immutable)
        var count: Int64 = 0
        // Before the first checkpoint even the schema is only in the log.
        try file.prepare("SELECT COUNT(*) FROM sqlite_master WHERE name = 'batches'").forEachRow { count = $0.int(0) }
        guard count == 1 else { return 0 }
        try file.prepare("SELECT COUNT(*) FROM batches").forEachRow { count = $0.int(0) }
        return count
    }

    @Test func theThreadCopiesTheLogIntoTheDatabaseWhileTheWriterOnlyCommits() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.path + "/kbtd.sqlite"
        let store = try SQLiteTelemetryStore(path: path, deferredSync: WALDurability.fdatasync)
        let checkpointer = try #require(store.checkpointer)
        #expect(try Self.idsInDatabaseFile(path) == 0)
        var committed = 0
        var number = 0
        // Commits until 500 frames wait to be copied (the thread is asked then), far from the
        // writer's own checkpoint at 4,000; a group of 200 batches writes a few dozen frames.
        while checkpointer.framesWritten < WALCheckpointer.backgroundFrames {
            _ = try store.commit(Self.group(number))
            try store.durability?.syncWritten()
            committed += 200
            number += 1
        }
        #expect(checkpointer.waitForPasses(beyond: 0, timeout: 20),
                "no checkpoint within 20 s of \(checkpointer.framesWritten) frames in the log")
        #expect(checkpointer.passes.lastError == nil)
        let inFile = try Self.idsInDatabaseFile(path)
        #expect(inFile > 0 && inFile <= Int64(committed), "\(inFile) of \(committed) ids in the database file")
        var size = stat()
        #expect(stat(path + "-wal", &size) == 0)
        #expect(Int(size.st_size) < WALCheckpointer.restartFrames * 4_120, "the log never reached the writer's own checkpoint")
    }

    /// With the thread stopped, only the writer's own checkpoint past `restartFrames` lets the log
    /// start over (with it running, the thread catches up between this test's commits by itself).
    @Test func theLogStartsOverOnceTheWriterRunsTheLastCheckpoint() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.path + "/kbtd.sqlite"
        let store = try SQLiteTelemetryStore(path: path, deferredSync: WALDurability.fdatasync)
        var largest: Int64 = 0
        var written = 0
        var frames = 0
        // Write about three logs' worth of frames (4,000 each); without a restart the file holds them all.
        var number = 0
        let checkpointer = try #require(store.checkpointer)
        checkpointer.stop()
        while written < 3 * WALCheckpointer.restartFrames * 4_120 {
            let before = checkpointer.framesWritten
            _ = try store.commit(Self.group(number))
            try store.durability?.syncWritten()
            frames += checkpointer.framesWritten - before
            written = frames * 4_120
            var size = stat()
            if stat(path + "-wal", &size) == 0 { largest = max(largest, Int64(size.st_size)) }
            number += 1
        }
        #expect(largest < Int64(2 * WALCheckpointer.restartFrames * 4_120),
                "log file \(largest) bytes after \(written) bytes of frames in \(number) commits")
        #expect(try Self.idsInDatabaseFile(path) > 0)
        var count: Int64 = 0
        try store.db.prepare("SELECT COUNT(*) FROM batches").forEachRow { count = $0.int(0) }
        #expect(count == Int64(number * 200))
    }
}
