import CSQLite
import Dispatch
import Foundation
import Synchronization

/// Copies the write-ahead log into the database on a thread and SQLite connection of its own,
/// so the writer's commits do not (the daemon's store, `SQLiteTelemetryStore(deferredSync:)`).
///
/// SQLite's automatic checkpoint runs inside the commit that takes the log past 1,000 frames:
/// the writer thread reads those frames back, writes their pages into the database and syncs
/// both files while every batch waits, about a quarter of the writer's CPU under full ingest.
/// Here the writer's connection has no
/// automatic checkpoint; its WAL hook (`walCommitted(frames:)`, called by SQLite after each
/// commit on the writer's thread) asks this thread for a passive checkpoint once
/// `backgroundFrames` frames wait to be copied. A passive checkpoint never blocks the writer
/// and copies the frames written before it started: SQLite syncs the log before copying (the
/// connection is `synchronous=FULL`), so a checkpoint never outruns the log, and the database
/// after.
///
/// The log starts over from its first frame only when every frame in it has been copied, at
/// the writer's next transaction; a log written while a checkpoint copies is never quite
/// caught up. So once the log holds `restartFrames`, the writer runs the last passive
/// checkpoint itself, which copies only what this thread has not (a few hundred frames at
/// most), and the log starts over: about 16 MiB of log at 4 KiB pages. If this thread holds
/// the checkpoint lock at that moment, the writer tries again after its next commit; the
/// writer's truncating checkpoint past `max_wal_bytes` stays the last resort.
final class WALCheckpointer: Sendable {
    /// Frames waiting to be copied before this thread is asked for a checkpoint.
    static let backgroundFrames = 500
    /// Frames in the log from which the writer runs the last checkpoint, so the log starts over.
    static let restartFrames = 4_000

    private struct State {
        var requested = false
        var stopping = false
        /// Frames in the log that are copied into the database (the last checkpoint's `pnCkpt`).
        var copied = 0
        /// Frames in the log after the writer's last commit.
        var logged = 0
        /// Frames the writer's commits have written in all (what the tests read).
        var written = 0
        var passes = 0
        var lastError: String?
    }

    private let path: String
    private let state = Mutex(State())
    private let wakeup = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    /// Broadcast after each checkpoint this thread runs (`waitForPasses`).
    private let passed = NSCondition()

    /// Starts the thread (`kbtd-checkpoint`); its connection opens on first use.
    init(databasePath: String) {
        path = databasePath
        let thread = Thread { [self] in
            StoreThreads.nameKernelThread("kbtd-checkpoint")
            self.work()
            self.finished.signal()
        }
        thread.name = "kbtd-checkpoint"
        thread.start()
    }

    /// Checkpoints this thread has run, and the last one's error: what the tests read.
    var passes: (count: Int, lastError: String?) { state.withLock { ($0.passes, $0.lastError) } }

    /// Waits until this thread has run more than `count` checkpoints, at most `timeout` seconds;
    /// true when it has (what the tests wait for instead of polling `passes`).
    func waitForPasses(beyond count: Int, timeout: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        passed.lock()
        defer { passed.unlock() }
        // `passes` is read under `passed`'s lock, which the thread takes after each pass's update:
        // a pass between the read and the wait still wakes it.
        while passes.count <= count {
            if !passed.wait(until: deadline) { return passes.count > count }
        }
        return true
    }

    /// Frames the writer's commits have written since it opened.
    var framesWritten: Int { state.withLock { $0.written } }

    /// Ends the thread after the checkpoint it may be running, and closes its connection; the
    /// writer's own checkpoint past `restartFrames` still bounds the log.
    func stop() {
        guard state.withLock({ state in defer { state.stopping = true }; return !state.stopping }) else { return }
        wakeup.signal()
        finished.wait()
    }

    /// The writer's WAL hook, on the writer's thread after each commit: `frames` are in the
    /// log now. Returns true when the writer should run the last checkpoint itself.
    func walCommitted(frames: Int) -> Bool {
        let (wake, restart) = state.withLock { state -> (Bool, Bool) in
            // Fewer frames than after the last commit: the log started over.
            if frames < state.logged { state.copied = 0; state.logged = 0 }
            state.written += frames - state.logged
            state.logged = frames
            if frames >= Self.restartFrames { return (false, true) }
            guard !state.requested, frames - state.copied >= Self.backgroundFrames else { return (false, false) }
            state.requested = true
            return (true, false)
        }
        if wake { wakeup.signal() }
        return restart
    }

    /// The writer's own checkpoint copied everything up to `copied` frames.
    func writerCopied(_ copied: Int) {
        state.withLock { $0.copied = max($0.copied, copied) }
    }

    private func work() {
        var connection: SQLiteConnection?
        while true {
            wakeup.wait()
            if state.withLock({ $0.stopping }) { return }
            do {
                if connection == nil {
                    let opened = try SQLiteConnection(path: path, mode: .readWrite)
                    // The log's sync before copying and the database's after (FULL and NORMAL
                    // both do them in a checkpoint); no busy wait: a busy checkpoint is retried.
                    try opened.execute("PRAGMA synchronous = FULL; PRAGMA busy_timeout = 0;")
                    connection = opened
                }
                var logged: Int32 = 0
                var copied: Int32 = 0
                let status = sqlite3_wal_checkpoint_v2(connection!.handle, "main", SQLITE_CHECKPOINT_PASSIVE, &logged, &copied)
                state.withLock { state in
                    state.requested = false
                    state.passes += 1
                    if status == SQLITE_OK {
                        // The log may have started over since: then what was copied is not this log's.
                        if Int(logged) <= state.logged { state.copied = max(state.copied, Int(copied)) }
                        state.lastError = nil
                    } else if status != SQLITE_BUSY {
                        state.lastError = String(cString: sqlite3_errmsg(connection!.handle))
                    }
                }
            } catch {
                state.withLock { $0.requested = false; $0.lastError = "\(error)" }
            }
            passed.lock()
            passed.broadcast()
            passed.unlock()
        }
    }
}
