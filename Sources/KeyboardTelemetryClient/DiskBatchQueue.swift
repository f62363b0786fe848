import Foundation

/// One batch waiting in the on-disk queue.
struct QueuedBatch: Sendable, Equatable {
    /// Position in the queue: lower is older.
    var sequence: UInt64
    /// The batch's idempotency key, fixed when the batch was sealed.
    var id: UUID
    var sampleCount: Int
    /// Size of the gzip body on disk.
    var bytes: Int
    var file: URL
}

/// The bounded on-disk queue: one file per batch holding the gzip body
/// exactly as it is sent, named `SEQUENCE-BATCHID-SAMPLES.json.gz`. A file is
/// written to a temporary name and renamed into place, so after a crash a
/// batch file is either whole or absent. Not thread-safe: the `Outbox` actor owns it.
struct DiskBatchQueue {
    let directory: URL
    let maxBatches: Int
    let maxBytes: Int
    let synchronousWrites: Bool
    /// Oldest first.
    private(set) var batches: [QueuedBatch] = []
    private(set) var nextSequence: UInt64 = 1

    static let suffix = ".json.gz"

    /// Opens (or creates) the queue in `directory`, picking up what an earlier run left.
    /// Leftover temporary files are removed; files with unreadable names are dropped.
    init(directory: URL, maxBatches: Int, maxBytes: Int, synchronousWrites: Bool, logger: TelemetryLogger) throws {
        self.directory = directory
        self.maxBatches = max(1, maxBatches)
        self.maxBytes = max(1, maxBytes)
        self.synchronousWrites = synchronousWrites
        let fileManager = FileManager.default
        try fileManager.createDirectory(at: directory, withIntermediateDirectories: true)
        for name in try fileManager.contentsOfDirectory(atPath: directory.path) {
            let url = directory.appendingPathComponent(name)
            if name.hasPrefix(".tmp-") {
                try? fileManager.removeItem(at: url)
            } else if name.hasSuffix(Self.suffix) {
                guard let batch = Self.parse(name: name, in: directory) else {
                    logger.log(.warning, "dropping unreadable queue file \(name)")
                    try? fileManager.removeItem(at: url)
                    continue
                }
                batches.append(batch)
            }
        }
        batches.sort { $0.sequence < $1.sequence }
        nextSequence = (batches.last?.sequence ?? 0) + 1
    }

    var isEmpty: Bool { batches.isEmpty }
    var totalBytes: Int { batches.reduce(0) { $0 + $1.bytes } }
    var oldest: QueuedBatch? { batches.first }

    /// Writes a sealed batch (temp file, fsync when asked, rename) and then
    /// drops the oldest batches while the queue is over a cap. Returns the dropped ones.
    mutating func enqueue(id: UUID, sampleCount: Int, body: Data) throws -> (QueuedBatch, evicted: [QueuedBatch]) {
        let sequence = nextSequence
        nextSequence += 1
        let digits = String(sequence)
        let name = String(repeating: "0", count: max(0, 20 - digits.count)) + digits + "-" + id.uuidString.lowercased() + "-\(sampleCount)" + Self.suffix
        let file = directory.appendingPathComponent(name)
        let temporary = directory.appendingPathComponent(".tmp-" + name)
        guard FileManager.default.createFile(atPath: temporary.path, contents: nil) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: temporary.path])
        }
        do {
            let handle = try FileHandle(forWritingTo: temporary)
            defer { try? handle.close() }
            try handle.write(contentsOf: body)
            if synchronousWrites { try handle.synchronize() }
        }
        do {
            try FileManager.default.moveItem(at: temporary, to: file)
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
        let batch = QueuedBatch(sequence: sequence, id: id, sampleCount: sampleCount, bytes: body.count, file: file)
        batches.append(batch)
        var evicted: [QueuedBatch] = []
        var bytes = totalBytes
        while batches.count > maxBatches || (bytes > maxBytes && batches.count > 1) {
            let oldest = batches.removeFirst()
            bytes -= oldest.bytes
            try? FileManager.default.removeItem(at: oldest.file)
            evicted.append(oldest)
        }
        return (batch, evicted)
    }

    /// The gzip body of a queued batch.
    func body(of batch: QueuedBatch) throws -> Data {
        try Data(contentsOf: batch.file)
    }

    /// Removes a batch that was delivered or refused for good. False when it was no longer queued.
    @discardableResult
    mutating func remove(_ batch: QueuedBatch) -> Bool {
        guard let index = batches.firstIndex(where: { $0.sequence == batch.sequence }) else { return false }
        batches.remove(at: index)
        try? FileManager.default.removeItem(at: batch.file)
        return true
    }

    func contains(_ batch: QueuedBatch) -> Bool {
        batches.contains { $0.sequence == batch.sequence }
    }

    static func parse(name: String, in directory: URL) -> QueuedBatch? {
        let stem = name.dropLast(suffix.count)
        // SEQUENCE-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx-SAMPLES
        let parts = stem.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 7, let sequence = UInt64(parts[0]), let samples = Int(parts[6]), samples > 0,
              let id = UUID(uuidString: parts[1...5].joined(separator: "-")) else { return nil }
        let file = directory.appendingPathComponent(name)
        let size = (try? file.resourceValues(forKeys: [.fileSizeKey]))?.fileSize ?? 0
        guard size > 0 else { return nil }
        return QueuedBatch(sequence: sequence, id: id, sampleCount: samples, bytes: size, file: file)
    }
}
