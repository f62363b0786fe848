import CSQLite
import CSQLiteWALBuffer
import Foundation
import KBTDCore
@testable import KBTDStore
import KBTDTestSupport
import Testing

/// The daemon's writer opens its database through `CSQLiteWALBuffer`'s VFS: a commit's log frames
/// (two writes each, a header and a page) leave in one pwrite, written before SQLite makes them
/// visible, and a reader on SQLite's default VFS reads every commit as soon as it returns.
@Suite("A commit's log frames in one write", .ownThreads, .timeLimit(.minutes(10)))
struct WALBufferTests {
    @Test func aCommitsFramesLeaveInOneWriteAndAReaderSeesEachCommit() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.path + "/kbtd.sqlite"
        let store = try SQLiteTelemetryStore(path: path, deferredSync: WALDurability.fdatasync)
        let reader = try SQLiteConnection(path: path, mode: .readOnly)
        var committed = 0
        for number in 0..<40 {
            var writes: Int64 = 0, flushes: Int64 = 0
            // The log opens with the first transaction; the migrations ran one.
            #expect(kbtd_walbuffer_log_counts(store.db.handle, &writes, &flushes) == SQLITE_OK)
            let group = WALCheckpointerTests.group(number, size: 50)
            _ = try store.commit(group)
            committed += group.count
            var writesAfter: Int64 = 0, flushesAfter: Int64 = 0
            #expect(kbtd_walbuffer_log_counts(store.db.handle, &writesAfter, &flushesAfter) == SQLITE_OK)
            // Dozens of pages a commit, two writes each, in one flush; two when the log started over
            // after the checkpoint thread's checkpoint (SQLite then writes a frame again elsewhere).
            #expect(writesAfter - writes >= 20, "commit \(number)")
            #expect(flushesAfter - flushes >= 1 && (flushesAfter - flushes) * 10 <= writesAfter - writes,
                    "commit \(number): \(writesAfter - writes) writes in \(flushesAfter - flushes) flushes")
            var seen: Int64 = 0
            try reader.prepare("SELECT COUNT(*) FROM batches").forEachRow { seen = $0.int(0) }
            #expect(seen == Int64(committed), "commit \(number)")
            try store.durability?.syncWritten()
        }
        // Stores outside the daemon's writer use SQLite's default VFS.
        var writes: Int64 = 0, flushes: Int64 = 0
        #expect(kbtd_walbuffer_log_counts(reader.handle, &writes, &flushes) == SQLITE_NOTFOUND)
    }

    /// A commit written through the VFS and not checkpointed is in the log a new process reads:
    /// the log is recovered from the file alone (no shared memory left), frames and checksums whole.
    @Test func theLogAloneHoldsEveryCommit() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.path + "/kbtd.sqlite"
        var committed = 0
        do {
            let store = try SQLiteTelemetryStore(path: path, deferredSync: WALDurability.fdatasync)
            store.checkpointer?.stop()
            for number in 0..<10 {
                let group = WALCheckpointerTests.group(number, size: 50)
                _ = try store.commit(group)
                committed += group.count
            }
            try store.durability?.syncWritten()
            // A copy of the database and its log as kill -9 would leave them (no checkpoint at close).
            for suffix in ["", "-wal"] {
                try FileManager.default.copyItem(atPath: path + suffix, toPath: directory.path + "/copy.sqlite" + suffix)
            }
        }
        let copy = try SQLiteConnection(path: directory.path + "/copy.sqlite", mode: .readWrite)
        var seen: Int64 = 0
        try copy.prepare("SELECT COUNT(*) FROM batches").forEachRow { seen = $0.int(0) }
        #expect(seen == Int64(committed))
        var check = ""
        try copy.prepare("PRAGMA integrity_check").forEachRow { check = $0.text(0) }
        #expect(check == "ok")
    }
}
