import Foundation
import KeyboardTelemetryClient

/// The real file system, with every call written down: which operation, on which path, and the
/// label of the thread that made it (to show that a caller's thread made none).
public final class RecordingFileSystem: TelemetryFileSystem, @unchecked Sendable {  // guarded by `lock`
    /// One call.
    public struct Call: Sendable, Equatable {
        /// `createDirectory`, `contentsOfDirectory`, `readFile`, `fileSize`, `writeFile`, `moveItem`, `removeItem`, `excludeFromBackup`.
        public var operation: String
        /// The path operated on (the source of a move).
        public var path: String
        /// The calling thread's label (`label(currentThread:)`), nil for a thread without one.
        public var thread: String?
    }

    private let inner: any TelemetryFileSystem
    private let lock = NSLock()
    private var log: [Call] = []

    /// Records calls to `inner` (the local file system by default).
    public init(_ inner: any TelemetryFileSystem = LocalFileSystem()) { self.inner = inner }

    private static let labelKey = "RecordingFileSystem.thread"

    /// Labels the current thread for `Call.thread`. Not its name: on Linux a thread starts with
    /// the name of the thread that started it, so a pool thread a labelled caller happens to
    /// start would carry the caller's name; a thread's dictionary is its own.
    public static func label(currentThread label: String) {
        Thread.current.threadDictionary[labelKey] = label
    }

    /// The current thread's label, nil when it has none.
    public static var currentThreadLabel: String? { Thread.current.threadDictionary[labelKey] as? String }

    /// Every call so far, in order.
    public var calls: [Call] { lock.withLock { log } }

    private func note(_ operation: String, _ url: URL) {
        let call = Call(operation: operation, path: url.path, thread: Self.currentThreadLabel)
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
