import Foundation
import KBTDCore
import KBTDStore
import Logging
import Synchronization
import Testing

/// The store protocols are async; SQLite answers them synchronously, so its calls
/// must run on `StoreThreads`, never on the cooperative pool.
@Suite("Store threads: where a synchronous store runs behind the async protocol", .timeLimit(.minutes(2)))
struct StoreThreadsTests {
    /// The `StoreThreads` a synchronous call runs on, by name (nil: any other thread).
    static func threadName() -> String? { StoreThreads.currentName }

    /// Awaits a read through the protocol, then names the thread the call ran on.
    static func readAndName(_ store: any TelemetryReader) async throws -> String? {
        _ = try await store.statsTotals(StatsFilter())
        return threadName()
    }

    @Test func anSQLiteReadAwaitedThroughTheProtocolRunsOnTheStoreThreads() async throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("kbtd.sqlite").path
        _ = try SQLiteTelemetryStore(path: path)
        let threads = StoreThreads(name: "kbtd-test-reader")
        defer { threads.stop() }
        let name = try await withTaskExecutorPreference(threads) {
            let store: any TelemetryReader = try SQLiteTelemetryStore(path: path, access: .readOnly)
            return try await Self.readAndName(store)
        }
        #expect(name == "kbtd-test-reader")
    }

    @Test func theWriterCommitsOnItsOwnThread() async throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("kbtd.sqlite").path
        let commits = Mutex<[String?]>([])
        #expect(Self.threadName() == nil, "a test runs on the cooperative pool")
        let writer = GroupCommitWriter(openStore: { try SQLiteTelemetryStore(path: path) }, capacity: 10, retention: 86_400,
                                       logger: Logger(label: "kbtd-test")) { _, _, _ in
            commits.withLock { $0.append(Self.threadName()) }
        }
        #expect(try await writer.submit(pendingBatch("a")) == .stored)
        #expect(try await writer.submit(pendingBatch("a")) == .duplicate)
        await writer.shutdown()
        #expect(commits.withLock { $0 } == ["kbtd-writer", "kbtd-writer"])
        await #expect(throws: WriteError.shuttingDown) { try await writer.submit(pendingBatch("b")) }
    }
}
