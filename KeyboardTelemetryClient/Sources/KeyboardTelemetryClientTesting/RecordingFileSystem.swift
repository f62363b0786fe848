import Foundation
import KeyboardTelemetryClient

/// The real file system, with every call written down: which operation, on which path, and the
/// name of the thread that made it (to show that a caller's thread made none).
public final class RecordingFileSystem: TelemetryFileSystem, @unchecked Sendable {  // guarded by `lock`
    /// One call.
    public struct Call: Sendable, Equatable {
        /// `createDirectory`, `contentsOfDirectory`, `readFile`, `fileSize`, `writeFile`, `moveItem`, `removeItem`, `excludeFromBackup`.
        public var operation: String
        /// The path operated on (the source of a move).
        public var path: String
        /// `Thread.current.name` at the call (nil or empty for unnamed threads).
        public var thread: String?
    }

    private let inner: any TelemetryFileSystem
    private let lock = NSLock()
    private var log: [Call] = []

    /// Records calls to `inner` (the local file system by default).
    public init(_ inner: any TelemetryFileSystem = LocalFileSystem()) { self.inner = inner }

    /// Every call so far, in order.
    public var calls: [Call] { lock.withLock { log } }

    private func note(_ operation: String, _ url: URL) {
        let call = Call(operation: operation, path: url.path, thread: Thread.current.name)
        lock.withLock { log.append(call) }
    }

    public func createDirectory(at url: URL) throws {
        note("createDirectory", url)
        try inner.createDirectory(at: url)
    }

    public func contentsOfDirectory(at url: URL) throws -> [String] {
        note("contentsOfDirectory", url)
        return try inner.contentsOfDirectory(at: url)
    }

    public func readFile(at url: URL) throws -> Data {
        note("readFile", url)
        return try inner.readFile(at: url)
    }

    public func fileSize(at url: URL) throws -> Int {
        note("fileSize", url)
        return try inner.fileSize(at: url)
    }

    public func writeFile(_ data: Data, to url: URL, durable: Bool) throws {
        note("writeFile", url)
        try inner.writeFile(data, to: url, durable: durable)
    }

    public func moveItem(at source: URL, to destination: URL) throws {
        note("moveItem", source)
        try inner.moveItem(at: source, to: destination)
    }

    public func removeItem(at url: URL) throws {
        note("removeItem", url)
        try inner.removeItem(at: url)
    }

    public func excludeFromBackup(_ url: URL) throws {
        note("excludeFromBackup", url)
        try inner.excludeFromBackup(url)
    }
}
