import Dispatch
import KBTDCore

/// The writer's sync thread ("kbtd-sync"): for a store with deferred durability, the writer hands
/// each written commit over (`handOver`); this thread fsyncs the log once for every commit written
/// by then and completes them in commit order, while the writer runs the next commit. The members
/// of `GroupCommitWriter` this file shares are internal for it (the writer's state, the commits
/// waiting, the two semaphores, `complete`).
extension GroupCommitWriter {
    /// Queues a written commit for the sync thread; waits while `maxCommitsAwaitingSync` wait.
    /// False when a sync failed: the writer has then waited for the sync thread to finish
    /// everything handed over, and the store must be opened again.
    func handOver(_ written: Written) -> Bool {
        syncing.withLock { $0.written.append(written) }
        syncWakeup.signal()
        while syncing.withLock({ $0.written.count >= Self.maxCommitsAwaitingSync && $0.failure == nil }) {
            _ = syncProgress.wait(timeout: .now() + .milliseconds(500))
        }
        guard syncing.withLock({ $0.failure != nil }) else { return true }
        awaitSyncThread()
        return !takeSyncFailure()
    }

    /// Waits until the sync thread has completed (or failed) every commit handed to it.
    func awaitSyncThread() {
        while syncing.withLock({ !$0.written.isEmpty || $0.since != nil }) {
            _ = syncProgress.wait(timeout: .now() + .milliseconds(500))
        }
    }

    /// True when a sync failed since the last call (then cleared: the caller drops the store).
    func takeSyncFailure() -> Bool {
        syncing.withLock { state in
            defer { state.failure = nil }
            return state.failure != nil
        }
    }

    /// The sync thread's loop: takes every commit written so far, makes the log durable once
    /// for all of them, then completes them in commit order; returns once stopped and drained.
    func completeDurableCommits(onEvict: @Sendable ([SeriesKey]) -> Void, onCommit: CommitObserver) {
        while true {
            syncWakeup.wait()
            let (taken, stopping, failed) = syncing.withLock { state -> ([Written], Bool, String?) in
                let taken = state.written
                state.written = []
                if !taken.isEmpty { state.since = .now }
                return (taken, state.stopping, state.failure)
            }
            if taken.isEmpty {
                if stopping { return }
                continue
            }
            var failure = failed
            if failure == nil {
                // One fsync covers every commit of a log; a store opened again has a log object of its own.
                var synced: [ObjectIdentifier] = []
                for written in taken where !synced.contains(ObjectIdentifier(written.durability)) {
                    do {
                        try written.durability.syncWritten()
                        synced.append(ObjectIdentifier(written.durability))
                    } catch {
                        failure = "\(error)"
                        break
                    }
                }
            }
            for written in taken {
                if let failure {
                    logger.error("commit of \(written.jobs.count) batches was not made durable", metadata: ["error": "\(failure)"])
                    state.withLock { $0.lastError = failure; $0.commitFailed = true }
                    for job in written.jobs { job.continuation.resume(throwing: WriteError.unavailable(failure)) }
                } else {
                    complete(jobs: written.jobs, result: written.result, start: written.start,
                             onEvict: onEvict, onCommit: onCommit)
                }
            }
            syncing.withLock { state in
                state.since = nil
                if let failure { state.failure = failure }
            }
            syncProgress.signal()
        }
    }
}
