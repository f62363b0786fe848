import Foundation

/// Every file operation the client makes: the batch queue and the heights cache go through it and
/// nothing else touches the disk. `LocalFileSystem` is the real one; tests pass a recording one.
/// Calls come from the client's own tasks, never from the thread that calls `init`, `record` or
/// `estimatedHeight`.
public protocol TelemetryFileSystem: Sendable {
    /// Creates a directory and any missing parents; succeeds when it exists.
    func createDirectory(at url: URL) throws
    /// The names in a directory.
    func contentsOfDirectory(at url: URL) throws -> [String]
    /// A file's bytes.
    func readFile(at url: URL) throws -> Data
    /// A file's size in bytes.
    func fileSize(at url: URL) throws -> Int
    /// Creates or truncates a file and writes `data`; with `durable`, `fsync`s it before returning.
    func writeFile(_ data: Data, to url: URL, durable: Bool) throws
    /// Renames a file, replacing `destination` if it exists (atomically, as `rename(2)` does).
    func moveItem(at source: URL, to destination: URL) throws
    /// Removes a file or directory.
    func removeItem(at url: URL) throws
    /// Marks a file or directory as excluded from iCloud and iTunes backups (a no-op where there are none).
    func excludeFromBackup(_ url: URL) throws
}

/// The real file system, over `FileManager`, `FileHandle` and `rename(2)`.
public struct LocalFileSystem: TelemetryFileSystem {
    /// The file system of this process.
    public init() {}

    public func createDirectory(at url: URL) throws {
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    public func contentsOfDirectory(at url: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: url.path)
    }

    public func readFile(at url: URL) throws -> Data {
        try Data(contentsOf: url)
    }

    public func fileSize(at url: URL) throws -> Int {
        try url.resourceValues(forKeys: [.fileSizeKey]).fileSize ?? 0
    }

    public func writeFile(_ data: Data, to url: URL, durable: Bool) throws {
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
        }
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        try handle.write(contentsOf: data)
        if durable { try handle.synchronize() }
    }

    public func moveItem(at source: URL, to destination: URL) throws {
        guard rename(source.path, destination.path) == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: destination.path,
                                                           NSUnderlyingErrorKey: POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)])
        }
    }

    public func removeItem(at url: URL) throws {
        try FileManager.default.removeItem(at: url)
    }

    public func excludeFromBackup(_ url: URL) throws {
        #if canImport(Darwin)
        var values = URLResourceValues()
        values.isExcludedFromBackup = true
        var url = url
        try url.setResourceValues(values)
        #endif
    }
}
