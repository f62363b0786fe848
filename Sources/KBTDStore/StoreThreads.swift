import Dispatch
import Foundation
import Synchronization

/// Threads of kbtd's own, as a `TaskExecutor`, for a store whose calls block
/// (SQLite: a read, a commit's fsync). The store protocols are async; SQLite
/// answers them synchronously, so a task that awaits it prefers these threads
/// and never blocks the cooperative pool (two threads here: a blocked one
/// stalls half of every other task). PostgreSQL's store awaits postgres-nio
/// and suspends, leaving the thread free. The group-commit writer runs on a
/// one-thread instance of its own; the read-only endpoints on `readers`.
///
///     let totals = try await withTaskExecutorPreference(StoreThreads.readers) {
///         try await store.statsTotals(filter)
///     }
public final class StoreThreads: TaskExecutor, Sendable {
    /// The read-only endpoints' reads (`/v1/stats`, `/dashboard`): as many threads as cores, at least two.
    public static let readers = StoreThreads(name: "kbtd-reader", count: max(2, ProcessInfo.processInfo.activeProcessorCount))

    private struct State {
        var jobs: [UnownedJob] = []
        var stopping = false
    }

    private let state = Mutex(State())
    /// Counts jobs queued (and one per thread at `stop()`): an idle thread sleeps on it.
    private let queued = DispatchSemaphore(value: 0)
    private let count: Int

    /// Starts `count` threads named `name` (with their number when more than one).
    public init(name: String, count: Int = 1) {
        self.count = count
        for number in 0..<count {
            let thread = Thread { [self] in self.work() }
            thread.name = count == 1 ? name : "\(name)-\(number)"
            thread.start()
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        state.withLock { $0.jobs.append(job) }
        queued.signal()
    }

    /// Lets the threads end once the jobs queued so far have run (the writer's, when its loop returns).
    public func stop() {
        state.withLock { $0.stopping = true }
        for _ in 0..<count { queued.signal() }
    }

    private func work() {
        let executor = asUnownedTaskExecutor()
        while true {
            queued.wait()
            let (job, stopping) = state.withLock { state -> (UnownedJob?, Bool) in
                (state.jobs.isEmpty ? nil : state.jobs.removeFirst(), state.stopping)
            }
            if let job {
                job.runSynchronously(on: executor)
            } else if stopping {
                return
            }
        }
    }
}
