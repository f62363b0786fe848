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
    /// The newest sample's time, whole Unix seconds (nil for files written before the name carried it).
    var newestSample: Int64?
    var file: URL
}

/// The bounded on-disk queue: one file per batch holding the gzip body
/// exactly as it is sent, named `SEQUENCE-BATCHID-SAMPLES-NEWEST.json.gz` (NEWEST: the newest
/// sample's Unix seconds, so a batch that waited past kbtd's age limit is dropped unread). A file is
/// written to a temporary name and renamed into place, so after a crash a
/// batch file is either whole or absent. Not thread-safe: the `Outbox` actor owns it.
struct DiskBatchQueue {
    let directory: URL
    let fileSystem: any TelemetryFileSystem
    let maxBatches: Int
    let maxBytes: Int
    let synchronousWrites: Bool
    /// Oldest first.
    private(set) var batches: [QueuedBatch] = []
    private(set) var nextSequence: UInt64 = 1

    static let suffix = ".json.gz"

    /// Opens (or creates) the queue in `directory`, picking up what an earlier run left.
    /// Leftover temporary files are removed; files with unreadable names are dropped.
    init(directory: URL, fileSystem: any TelemetryFileSystem, maxBatches: Int, maxBytes: Int, synchronousWrites: Bool,
         logger: TelemetryLogger) throws {
        self.directory = directory
        self.fileSystem = fileSystem
        self.maxBatches = max(1, maxBatches)
        self.maxBytes = max(1, maxBytes)
        self.synchronousWrites = synchronousWrites
        try fileSystem.createDirectory(at: directory)
        for name in try fileSystem.contentsOfDirectory(at: directory) {
            let url = directory.appendingPathComponent(name)
            if name.hasPrefix(".tmp-") {
                try? fileSystem.removeItem(at: url)
            } else if name.hasSuffix(Self.suffix) {
                guard let batch = Self.parse(name: name, in: directory, fileSystem: fileSystem) else {
                    logger.log(.warning, "dropping unreadable queue file \(name)")
                    try? fileSystem.removeItem(at: url)
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
    mutating func enqueue(id: UUID, sampleCount: Int, newestSample: Int64, body: Data) throws -> (QueuedBatch, evicted: [QueuedBatch]) {
        let sequence = nextSequence
        nextSequence += 1
        let digits = String(sequence)
        let name = String(repeating: "0", count: max(0, 20 - digits.count)) + digits + "-" + id.uuidString.lowercased()
            + "-\(sampleCount)-\(newestSample)" + Self.suffix
        let file = directory.appendingPathComponent(name)
        let temporary = directory.appendingPathComponent(".tmp-" + name)
        do {
            try fileSystem.writeFile(body, to: temporary, durable: synchronousWrites)
            try fileSystem.moveItem(at: temporary, to: file)
        } catch {
            try? fileSystem.removeItem(at: temporary)
            throw error
        }
        let batch = QueuedBatch(sequence: sequence, id: id, sampleCount: sampleCount, bytes: body.count,
                                newestSample: newestSample, file: file)
        batches.append(batch)
        var evicted: [QueuedBatch] = []
        var bytes = totalBytes
        while batches.count > maxBatches || (bytes > maxBytes && batches.count > 1) {
            let oldest = batches.removeFirst()
            bytes -= oldest.bytes
            try? fileSystem.removeItem(at: oldest.file)
            evicted.append(oldest)
        }
        return (batch, evicted)
    }

    /// Removes a batch that was delivered or refused for good. False when it was no longer queued.
    @discardableResult
    mutating func remove(_ batch: QueuedBatch) -> Bool {
        guard let index = batches.firstIndex(where: { $0.sequence == batch.sequence }) else { return false }
        batches.remove(at: index)
        try? fileSystem.removeItem(at: batch.file)
        return true
    }

    func contains(_ batch: QueuedBatch) -> Bool {
        batches.contains { $0.sequence == batch.sequence }
    }

    static func parse(name: String, in directory: URL, fileSystem: any TelemetryFileSystem) -> QueuedBatch? {
        let stem = name.dropLast(suffix.count)
        // SEQUENCE-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx-SAMPLES-NEWEST (NEWEST absent in files of earlier versions)
        let parts = stem.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 7 || parts.count == 8, let sequence = UInt64(parts[0]), let samples = Int(parts[6]), samples > 0,
              let id = UUID(uuidString: parts[1...5].joined(separator: "-")) else { return nil }
        var newest: Int64?
        if parts.count == 8 {
            guard let seconds = Int64(parts[7]) else { return nil }
            newest = seconds
        }
        let file = directory.appendingPathComponent(name)
        let size = (try? fileSystem.fileSize(at: file)) ?? 0
        guard size > 0 else { return nil }
        return QueuedBatch(sequence: sequence, id: id, sampleCount: samples, bytes: size, newestSample: newest, file: file)
    }
}
