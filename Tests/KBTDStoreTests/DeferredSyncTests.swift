import Dispatch
import Foundation
import KBTDCore
import KBTDStore
import Logging
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The writer's commits with deferred durability (`WALDurability`): SQLite writes a commit
/// and returns, the writer's sync thread fsyncs the log, and only then are the commit's
/// requests answered, while the writer already runs the next commit. The flush here is
/// the real `fdatasync`, held or failed by the test.
@Suite("Deferred sync: a commit is answered after its log's fsync, the next one runs meanwhile", .timeLimit(.minutes(2)))
struct DeferredSyncTests {
    /// A flush that waits while the test holds it, counts its calls, and fails a file's
    /// (not its directory's) while told to.
    final class Flush: Sendable {
        private let gate = DispatchSemaphore(value: 0)
        private let state = Mutex((calls: 0, held: true, failing: false))

        var calls: Int { state.withLock { $0.calls } }

        func release() {
            state.withLock { $0.held = false }
            gate.signal()
        }

        func fail(_ failing: Bool) { state.withLock { $0.failing = failing } }

        var function: @Sendable (Int32) -> Int32 {
            { [self] descriptor in
                let held = state.withLock { state -> Bool in
                    state.calls += 1
                    return state.held
                }
                if held {
                    gate.wait()
                    gate.signal()  // the next call passes too
                }
                var file = stat()
                let directory = fstat(descriptor, &file) == 0 && (file.st_mode & S_IFMT) == S_IFDIR
                if !directory, state.withLock({ $0.failing }) {
                    errno = EIO
                    return -1
                }
                return fdatasync(descriptor)
            }
        }

        init(held: Bool) { state.withLock { $0.held = held } }
    }

    /// The requests answered so far, in order.
    final class Answered: Sendable {
        private let names = Mutex<[String]>([])
        func add(_ name: String) { names.withLock { $0.append(name) } }
        var list: [String] { names.withLock { $0 } }
    }

    /// Batch ids stored, read through a connection of the test's own.
    static func storedIDs(_ path: String) throws -> Int {
        try SQLiteTelemetryStore(path: path, access: .readOnly).batchIDCount()
    }

    @Test func aCommitIsAnsweredOnlyAfterItsLogIsSyncedWhileTheNextCommits() async throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("kbtd.sqlite").path
        let flush = Flush(held: true)
        let observed = Mutex<[(batches: Int, thread: String?)]>([])
        let answered = Answered()
        let writer = GroupCommitWriter(openStore: { try SQLiteTelemetryStore(path: path, deferredSync: flush.function) },
                                       capacity: 10, retention: 86_400, logger: Logger(label: "kbtd-test")) { _, batches, _ in
            observed.withLock { $0.append((batches, StoreThreads.currentName)) }
        }
        let first = Task {
            let outcome = try await writer.submit(pendingBatch("a"))
            answered.add("a")
            return outcome
        }
        try await waitUntil("the sync thread flushing the first commit's log") { flush.calls >= 1 }
        let second = Task {
            let outcome = try await writer.submit(pendingBatch("b"))
            answered.add("b")
            return outcome
        }
        // The writer commits the second batch while the first one's fsync is held.
        try await waitUntil("the second batch committed while the first one's sync is held") { try Self.storedIDs(path) == 2 }
        #expect(answered.list.isEmpty, "no request is answered before its commit's fsync")
        #expect(observed.withLock { $0 }.isEmpty, "the index is told of no commit before its fsync")
        flush.release()
        #expect(try await first.value == .stored)
        #expect(try await second.value == .stored)
        await writer.shutdown()
        let commits = observed.withLock { $0 }
        #expect(commits.map(\.batches).reduce(0, +) == 2)
        #expect(commits.allSatisfy { $0.thread == "kbtd-sync" }, "\(commits)")
        #expect(answered.list.sorted() == ["a", "b"])
        #expect(writer.totals.stored == 2)
    }

    @Test func aFailedSyncAnswers503AndTheRetryIsStoredOnce() async throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("kbtd.sqlite").path
        let flush = Flush(held: false)
        flush.fail(true)
        let opened = Mutex(0)
        let writer = GroupCommitWriter(openStore: {
            opened.withLock { $0 += 1 }
            return try SQLiteTelemetryStore(path: path, deferredSync: flush.function)
        }, capacity: 10, retention: 86_400, logger: Logger(label: "kbtd-test")) { _, _, _ in }
        await #expect {
            _ = try await writer.submit(pendingBatch("a"))
        } throws: { error in
            guard case WriteError.unavailable(let reason) = error else { return false }
            return reason.contains("fdatasync \(path)-wal: Input/output error")
        }
        #expect(writer.lastError?.contains("fdatasync") == true)
        flush.fail(false)
        // As a client would: retry while the writer opens the store again (503 until then).
        var outcome: WriteOutcome?
        try await waitUntil("the batch answered after the store was opened again") {
            outcome = try? await writer.submit(pendingBatch("a"))
            return outcome != nil
        }
        // Its first commit was written before the failed fsync: the retry finds its id.
        #expect(outcome == .duplicate)
        #expect(try await writer.submit(pendingBatch("b")) == .stored)
        #expect(opened.withLock { $0 } == 2, "the store is opened again after the failed sync")
        #expect(writer.lastError == nil)
        await writer.shutdown()
        #expect(try Self.storedIDs(path) == 2)
    }
}
