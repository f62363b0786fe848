import Foundation
import KeyboardTelemetryClient
import KeyboardTelemetryClientTesting
import Testing

/// Nothing blocks at start: `init` touches no file, the heights cache loads on the client's own task,
/// and `estimatedHeight` answers from the bundled table and defaults until it has.
@Suite("KeyboardTelemetryClient start-up", .serialized)  // a gated read holds one of the pool's threads
struct StartupTests {
    /// Runs `body` on a thread of its own labelled `name` for `RecordingFileSystem` (never one of the
    /// client's tasks' threads).
    static func onThread<T: Sendable>(named name: String, _ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread {
                RecordingFileSystem.label(currentThread: name)
                continuation.resume(returning: body())
            }.start()
        }
    }

    @Test func initMakesNoFileSystemCallOnTheCallersThreadAndTheCacheLoadsRightAfter() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // An earlier launch left a measurement and a queued batch.
        let earlier = KeyboardTelemetryClient(device: Fixtures.device, configuration: Fixtures.configuration(directory: directory),
                                              transport: Fixtures.refusing())
        earlier.record(Fixtures.show(height: 346))
        await earlier.shutdown()
        #expect(queueFiles(directory).count == 1)

        let files = RecordingFileSystem()
        let transport = Fixtures.accepting()
        let configuration = Fixtures.configuration(directory: directory)
        let (client, estimates, caller) = await Self.onThread(named: "caller") {
            () -> (KeyboardTelemetryClient, [KeyboardHeightEstimate], String?) in
            let client = KeyboardTelemetryClient(device: Fixtures.device, configuration: configuration, transport: transport,
                                                 fileSystem: files)
            client.start()
            client.record(Fixtures.show(language: "ko-KR", height: 330))
            let estimates = [client.heightEstimate(language: "en-US", orientation: .portrait),
                             client.heightEstimate(language: "ko-KR", orientation: .portrait)]
            _ = client.shouldPrewarmKeyboard()
            return (client, estimates, RecordingFileSystem.currentThreadLabel)
        }
        #expect(caller == "caller", "the recording can tell the caller's thread apart")
        await client.waitUntilLoaded()
        #expect(await client.waitForDelivery(timeout: 30))
        #expect(client.counters.batchesAcknowledged == 1, "the earlier launch's batch left at start()")
        await client.shutdown()

        let calls = files.calls
        #expect(!calls.isEmpty, "the cache and the queue were read")
        #expect(calls.contains { $0.operation == "readFile" && $0.path.hasSuffix("heights.json") })
        #expect(calls.contains { $0.operation == "contentsOfDirectory" && $0.path.hasSuffix("queue") })
        #expect(calls.allSatisfy { $0.thread != "caller" }, "\(calls.filter { $0.thread == "caller" })")
        // This run's measurement answered at once; the stored one was not read yet on that thread
        // (the answer came from the default, or from the cache if the load won the race: never from the disk on the caller).
        #expect(estimates[1] == .init(height: 330, source: .measured))
    }

    @Test func answersFromTheDefaultsUntilLoadedAndFromTheCacheAfter() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let earlier = KeyboardTelemetryClient(device: Fixtures.device, configuration: Fixtures.configuration(directory: directory),
                                              transport: Fixtures.refusing())
        earlier.record(Fixtures.show(height: 346))
        await earlier.shutdown()

        // A file system that holds the cache's read until the test lets it go: the answer before loading is observable.
        let gate = Gate()
        let files = GatedFileSystem(gate: gate)
        var configuration = Fixtures.configuration(directory: directory)
        configuration.defaultPortraitHeight = 330
        let client = KeyboardTelemetryClient(device: Fixtures.device, configuration: configuration, transport: Fixtures.refusing(),
                                             fileSystem: files)
        #expect(await eventually { files.waiting }, "the load started on the client's own task")
        #expect(client.heightEstimate(language: "en-US", orientation: .portrait) == .init(height: 330, source: .configuredDefault))
        gate.open()
        await client.waitUntilLoaded()
        #expect(client.heightEstimate(language: "en-US", orientation: .portrait) == .init(height: 346, source: .measured))
        await client.shutdown()
    }

    @Test func thisRunsMeasurementWinsOverTheStoredOneOnceLoaded() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let earlier = KeyboardTelemetryClient(device: Fixtures.device, configuration: Fixtures.configuration(directory: directory),
                                              transport: Fixtures.refusing())
        earlier.record(Fixtures.show(height: 346))
        earlier.record(Fixtures.show(language: "ja-JP", height: 390))
        await earlier.shutdown()

        let gate = Gate()
        let files = GatedFileSystem(gate: gate)
        let client = KeyboardTelemetryClient(device: Fixtures.device, configuration: Fixtures.configuration(directory: directory),
                                             transport: Fixtures.refusing(), fileSystem: files)
        #expect(await eventually { files.waiting })
        client.record(Fixtures.show(height: 340))  // learned before the stored cache arrived
        gate.open()
        await client.waitUntilLoaded()
        #expect(client.heightEstimate(language: "en-US", orientation: .portrait) == .init(height: 340, source: .measured))
        #expect(client.heightEstimate(language: "ja-JP", orientation: .portrait) == .init(height: 390, source: .measured))
        await client.shutdown()
        // And the file now holds both.
        let next = KeyboardTelemetryClient(device: Fixtures.device, configuration: Fixtures.configuration(directory: directory),
                                           transport: Fixtures.refusing())
        await next.waitUntilLoaded()
        #expect(next.estimatedHeight(language: "en-US", orientation: .portrait) == 340)
        #expect(next.estimatedHeight(language: "ja-JP", orientation: .portrait) == 390)
        await next.shutdown()
    }
}

/// A one-way gate a file-system call can wait at: until the test opens it, or for 10 s at most, so a
/// client that read its cache inside `init` makes the test fail instead of hang.
final class Gate: @unchecked Sendable {  // guarded by `condition`
    private let condition = NSCondition()
    private var isOpen = false

    func open() {
        condition.lock()
        isOpen = true
        condition.broadcast()
        condition.unlock()
    }

    func wait() {
        let limit = Date().addingTimeInterval(10)
        condition.lock()
        while !isOpen && condition.wait(until: limit) {}
        condition.unlock()
    }
}

/// The local file system, except that reading `heights.json` waits at the gate.
final class GatedFileSystem: TelemetryFileSystem, @unchecked Sendable {  // `state` is locked
    private let inner = LocalFileSystem()
    private let gate: Gate
    private let state = NSLock()
    private var blocked = false

    init(gate: Gate) { self.gate = gate }

    /// A read of the heights cache is waiting at the gate.
    var waiting: Bool { state.withLock { blocked } }

    func readFile(at url: URL) throws -> Data {
        if url.lastPathComponent == "heights.json" {
            state.withLock { blocked = true }
            gate.wait()
        }
        return try inner.readFile(at: url)
    }

    func createDirectory(at url: URL) throws { try inner.createDirectory(at: url) }
    func contentsOfDirectory(at url: URL) throws -> [String] { try inner.contentsOfDirectory(at: url) }
    func fileSize(at url: URL) throws -> Int { try inner.fileSize(at: url) }
    func writeFile(_ data: Data, to url: URL, durable: Bool) throws { try inner.writeFile(data, to: url, durable: durable) }
    func moveItem(at source: URL, to destination: URL) throws { try inner.moveItem(at: source, to: destination) }
    func removeItem(at url: URL) throws { try inner.removeItem(at: url) }
    func excludeFromBackup(_ url: URL) throws { try inner.excludeFromBackup(url) }
}
