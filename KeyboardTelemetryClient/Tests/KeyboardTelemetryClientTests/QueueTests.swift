import Foundation
import KeyboardTelemetryClient
import KeyboardTelemetryClientTesting
import Testing

/// The bounded on-disk queue, without a server: caps, leftovers, older file names, backups.
@Suite("KeyboardTelemetryClient on-disk queue")
struct QueueTests {
    @Test func theByteCapDropsOldestFirst() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = Fixtures.configuration(directory: directory)
        configuration.maxQueuedBytes = 2_000
        let client = KeyboardTelemetryClient(device: Fixtures.device, configuration: configuration, transport: Fixtures.refusing())
        for _ in 0..<6 {
            for i in 0..<40 { client.record(Fixtures.show(Double(i))) }
            await client.flush()
        }
        let queued = await client.queuedBatchCount()
        let counters = client.counters
        #expect(queued >= 1 && queued < 6)
        #expect(counters.batchesEvicted == 6 - queued && counters.samplesEvicted == 40 * (6 - queued))
        let names = queueFiles(directory)
        let bytes = names.reduce(0) { total, name in
            total + ((try? LocalFileSystem().fileSize(at: directory.appendingPathComponent("queue").appendingPathComponent(name))) ?? 0)
        }
        #expect(bytes <= 2_000)
        // Files are named by sequence number: the survivors are the newest batches.
        let sequences = names.compactMap { $0.split(separator: "-").first.flatMap { Int($0) } }
        #expect(sequences == Array((6 - queued + 1)...6))
        await client.shutdown()
    }

    @Test func leftoverTemporaryAndUnreadableFilesAreCleanedUp() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let queue = directory.appendingPathComponent("queue")
        try FileManager.default.createDirectory(at: queue, withIntermediateDirectories: true)
        // A crash mid-write leaves a temporary file; a foreign file has a name the queue cannot read.
        try Data("partial".utf8).write(to: queue.appendingPathComponent(".tmp-00000000000000000001-x.json.gz"))
        try Data("junk".utf8).write(to: queue.appendingPathComponent("not-a-batch.json.gz"))
        let client = KeyboardTelemetryClient(device: Fixtures.device, configuration: Fixtures.configuration(directory: directory),
                                             transport: Fixtures.refusing())
        #expect(await client.queuedBatchCount() == 0)
        #expect(queueFiles(directory).isEmpty)
        await client.shutdown()
    }

    @Test func aBatchFileFromAnEarlierVersionIsStillSent() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Write one batch with today's client, then rename it as earlier versions named files (no NEWEST part).
        let writer = KeyboardTelemetryClient(device: Fixtures.device, configuration: Fixtures.configuration(directory: directory),
                                             transport: Fixtures.refusing())
        writer.record(Fixtures.show())
        await writer.flush()
        await writer.shutdown()
        let queue = directory.appendingPathComponent("queue")
        let name = try #require(queueFiles(directory).first)
        let parts = name.dropLast(".json.gz".count).split(separator: "-")
        #expect(parts.count == 8, "SEQUENCE-UUID-SAMPLES-NEWEST: \(name)")
        let legacy = parts.prefix(7).joined(separator: "-") + ".json.gz"
        try FileManager.default.moveItem(at: queue.appendingPathComponent(name), to: queue.appendingPathComponent(legacy))

        let transport = Fixtures.accepting()
        let client = KeyboardTelemetryClient(device: Fixtures.device, configuration: Fixtures.configuration(directory: directory),
                                             transport: transport)
        client.start()
        #expect(await client.waitForDelivery(timeout: 30))
        #expect(transport.batches.count == 1 && client.counters.batchesAcknowledged == 1)
        await client.shutdown()
    }

    @Test func theStorageDirectoryIsExcludedFromBackupsUnlessTurnedOff() async throws {
        for exclude in [true, false] {
            let directory = Fixtures.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            let files = RecordingFileSystem()
            var configuration = Fixtures.configuration(directory: directory)
            configuration.excludeFromBackup = exclude
            let client = KeyboardTelemetryClient(device: Fixtures.device, configuration: configuration, transport: Fixtures.refusing(),
                                                 fileSystem: files)
            client.record(Fixtures.show())
            await client.flush()
            await client.shutdown()
            let exclusions = files.calls.filter { $0.operation == "excludeFromBackup" }.map(\.path)
            #expect(exclusions == (exclude ? [directory.path] : []), "excludeFromBackup = \(exclude)")
        }
    }

    @Test func everyFileOperationGoesThroughTheInjectedFileSystem() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let files = RecordingFileSystem()
        let client = KeyboardTelemetryClient(device: Fixtures.device, configuration: Fixtures.configuration(directory: directory),
                                             transport: Fixtures.accepting(), fileSystem: files)
        client.start()
        client.record(Fixtures.show())
        #expect(await client.sendInBackground())
        await client.shutdown()
        let operations = Set(files.calls.map(\.operation))
        // Queue: write, rename, read, remove; cache: write and rename; directory: create and exclude.
        #expect(operations.isSuperset(of: ["createDirectory", "contentsOfDirectory", "writeFile", "moveItem", "readFile", "removeItem"]),
                "\(operations)")
        #expect(files.calls.allSatisfy { $0.path.hasPrefix(directory.path) })
    }
}
