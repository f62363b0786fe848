import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Runs a suite's tests off Swift's cooperative pool, on threads of their own.
///
/// The tests that drive a real process (spawn kbtd, wait for it, talk to it
/// over blocking sockets, run `sqlite3` or `nginx`) block the thread they run
/// on. On the cooperative pool (one thread per core: two here) that starves
/// every async test of the run, so such suites carry `.ownThreads`: each test
/// case runs with a task-executor preference for `BlockingTestExecutor`, whose
/// threads may block; child tasks inherit it. The pool stays free for the
/// async and pure tests, and the suite runs in parallel with the rest.
///
/// At most `BlockingTestExecutor.width` such test cases run at once (waiting
/// for a slot suspends, it holds no thread), so a parallel run does not start
/// every daemon of the suite at the same moment on a 2-core machine. A suite's
/// `.timeLimit` counts that wait too: the `.ownThreads` suites take 10 minutes,
/// and a test with `.ownThreads` under a shorter limit (its own or its suite's)
/// fails before it runs (`prepare(for:)`), not only in a parallel run that keeps it waiting.
package struct OwnThreadsTrait: SuiteTrait, TestTrait, TestScoping {
    package var isRecursive: Bool { true }

    /// The shortest `.timeLimit` an `.ownThreads` test may have (none is fine).
    package static let minimumTimeLimit: Duration = .seconds(600)

    /// Why a test with `.ownThreads` may not run: a time limit under `minimumTimeLimit`.
    package struct TimeLimitTooShort: Error, CustomStringConvertible {
        package var limit: Duration
        /// Names the minimum from `minimumTimeLimit`, so the message cannot drift from the check.
        package var description: String {
            "an .ownThreads test needs .timeLimit(.minutes(\(minimumTimeLimit.components.seconds / 60))) or more, or none, "
                + "not \(limit): the limit counts "
                + "the wait for a turn among the .ownThreads test cases (at most \(BlockingTestExecutor.width) run at once)"
        }
    }

    /// Throws `TimeLimitTooShort` for a time limit under `minimumTimeLimit`.
    package static func check(timeLimit: Duration?) throws {
        if let timeLimit, timeLimit < minimumTimeLimit { throw TimeLimitTooShort(limit: timeLimit) }
    }

    /// Refuses a test (or suite) whose time limit, its own or inherited from its suites, is too short.
    package func prepare(for test: Test) async throws {
        try Self.check(timeLimit: test.timeLimit)
    }

    /// Once per test case (not around a whole suite, nor around a parameterised test's cases).
    package func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    package func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        await BlockingTestExecutor.slots.acquire()
        defer { BlockingTestExecutor.slots.release() }
        try await withTaskExecutorPreference(BlockingTestExecutor.shared) {
            try await function()
        }
    }
}

extension Trait where Self == OwnThreadsTrait {
    /// The suite's tests block their thread (processes, sockets): run them off the cooperative pool.
    package static var ownThreads: Self { OwnThreadsTrait() }
}

/// A task executor whose threads are its own: a job that finds no idle thread
/// gets a new one, so a job that blocks never holds up another (the tests'
/// concurrent workers block on sockets while waiting for each other).
package final class BlockingTestExecutor: TaskExecutor, @unchecked Sendable {  // state under `condition`
    package static let shared = BlockingTestExecutor()

    /// How many `.ownThreads` test cases run at once: `KBTD_TEST_PROCESS_WIDTH`, else twice the cores.
    package static let width: Int = {
        if let text = ProcessInfo.processInfo.environment["KBTD_TEST_PROCESS_WIDTH"], let width = Int(text), width > 0 { return width }
        return max(2, 2 * ProcessInfo.processInfo.activeProcessorCount)
    }()

    package static let slots = AsyncSlots(width)
    package static let marker = ThreadMarker()

    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var idle = 0
    private var threads = 0

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        let spawn = jobs.count > idle
        if spawn { threads += 1 } else { condition.signal() }
        let number = threads
        condition.unlock()
        if spawn {
            let thread = Thread { [self] in work() }
            thread.name = "kbtd-own-\(number)"  // for debuggers; `marker` is what tells the threads apart
            thread.start()
        }
    }

    private func work() {
        let executor = asUnownedTaskExecutor()
        Self.marker.set()
        condition.lock()
        while true {
            while jobs.isEmpty {
                idle += 1
                condition.wait()
                idle -= 1
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: executor)
            condition.lock()
        }
    }

    /// True on one of this executor's threads (for the test that checks the trait applies).
    package static var isCurrentThreadOwn: Bool {
        marker.isSet
    }
}

/// A per-thread flag (pthread-specific data): set on the executor's threads.
package final class ThreadMarker: @unchecked Sendable {  // the key is written once in init
    private var key = pthread_key_t()
    package init() { pthread_key_create(&key, nil) }
    package func set() { pthread_setspecific(key, UnsafeRawPointer(bitPattern: 1)) }
    package var isSet: Bool { pthread_getspecific(key) != nil }
}

/// A counting semaphore for async code: `acquire` suspends (holding no thread) until a slot is free.
package final class AsyncSlots: @unchecked Sendable {  // state under `lock`
    private let lock = NSLock()
    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    package init(_ count: Int) { free = count }

    package func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            lock.lock()
            if free > 0 {
                free -= 1
                lock.unlock()
                continuation.resume()
            } else {
                waiting.append(continuation)
                lock.unlock()
            }
        }
    }

    package func release() {
        lock.lock()
        if waiting.isEmpty {
            free += 1
            lock.unlock()
        } else {
            let next = waiting.removeFirst()
            lock.unlock()
            next.resume()
        }
    }
}
