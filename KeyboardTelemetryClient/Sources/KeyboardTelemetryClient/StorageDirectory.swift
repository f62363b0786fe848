import Foundation

/// The client's storage directory: created, and excluded from backups, by whoever first writes to it
/// (the queue or the heights cache), on the client's own tasks.
final class StorageDirectory: Sendable {
    let url: URL
    let fileSystem: any TelemetryFileSystem
    let logger: TelemetryLogger
    private let excludeFromBackup: Bool
    private let prepared = Locked(false)

    init(configuration: TelemetryConfiguration, fileSystem: any TelemetryFileSystem) {
        url = configuration.storageDirectory
        self.fileSystem = fileSystem
        logger = configuration.logger
        excludeFromBackup = configuration.excludeFromBackup
    }

    /// Creates the directory (once per client) and marks it as excluded from backups.
    func prepare() throws {
        try prepared.withLock { prepared in
            guard !prepared else { return }
            try fileSystem.createDirectory(at: url)
            prepared = true
            guard excludeFromBackup else { return }
            do {
                try fileSystem.excludeFromBackup(url)
            } catch {
                logger.log(.warning, "cannot exclude \(url.path) from backups: \(error)")
            }
        }
    }

    func appending(_ name: String, isDirectory: Bool = false) -> URL {
        url.appendingPathComponent(name, isDirectory: isDirectory)
    }
}
