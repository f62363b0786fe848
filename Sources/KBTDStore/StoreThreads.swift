import Dispatch
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

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

    /// The threads' name (`currentName`).
    public let name: String
    private let state = Mutex(State())
    /// Counts jobs queued (and one per thread at `stop()`): an idle thread sleeps on it.
    private let queued = DispatchSemaphore(value: 0)
    private let count: Int

    /// Starts `count` threads, which `currentName` names `name`.
    public init(name: String, count: Int = 1) {
        self.name = name
        self.count = count
        for number in 0..<count {
            let threadName = count == 1 ? name : "\(name)-\(number)"
            let thread = Thread { [self] in
                // The kernel's name too (`/proc/PID/task/*/comm`, top -H, perf): Foundation sets only its own.
                Self.nameKernelThread(threadName)
                self.work()
            }
            thread.name = threadName
            thread.start()
        }
    }

    /// Names the calling thread for the kernel (`/proc/thread-self/comm`: Swift's Glibc module
    /// has no `pthread_setname_np`); at most 15 bytes are kept. Best effort: nothing depends on it.
    static func nameKernelThread(_ name: String) {
        let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { _ = close(descriptor) }
        let bytes = Array(name.utf8.prefix(15))
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
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

    /// The name of the `StoreThreads` the calling thread belongs to, nil on any other
    /// thread (the cooperative pool's, an event loop's). The kernel's thread name is set to it
    /// as well (at most 15 bytes), but other threads inherit their creator's, so it cannot tell.
    public static var currentName: String? {
        pthread_getspecific(ownerKey).map { Unmanaged<StoreThreads>.fromOpaque($0).takeUnretainedValue().name }
    }

    private func work() {
        // Unretained: the thread's closure holds `self` until `work` returns.
        pthread_setspecific(ownerKey, Unmanaged.passUnretained(self).toOpaque())
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

/// The `StoreThreads` each of its threads belongs to (`StoreThreads.currentName`).
private let ownerKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key, nil)
    return key
}()
