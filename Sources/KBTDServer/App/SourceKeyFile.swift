import Foundation
#if canImport(Glibc)
import Glibc
#endif
import KBTDCore
import KBTDPostgres
import Logging

/// The secret client networks are hashed under (`SourceKey`): where it comes
/// from, and its file, created once with mode 0600 and read at every start.
///
/// In order: `KBTD_SOURCE_KEY` (32 hexadecimal digits, `settings.sourceKey`);
/// the file `source_key_file` names; else `source.key` beside the SQLite
/// database file, or, for a PostgreSQL URL, in systemd's `STATE_DIRECTORY`
/// (else the working directory). Several nodes on one PostgreSQL database
/// must be given the same key (docs/scaling-out.md). The key is never
/// logged, and nothing kbtd writes into a database, an export or a migration
/// contains it.
public enum SourceKeyFile {
    public static let defaultName = "source.key"

    /// The key file this configuration uses, or nil when `KBTD_SOURCE_KEY` gives the key.
    public static func path(for settings: ServerSettings,
                            environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if settings.sourceKey != nil { return nil }
        if let file = settings.sourceKeyFile { return file }
        if PostgresURL.isURL(settings.database) {
            let state = environment["STATE_DIRECTORY"]?.split(separator: ":").first.map(String.init)
            return (state ?? FileManager.default.currentDirectoryPath) + "/" + defaultName
        }
        return DatabaseFolder.of(settings.database) + "/" + defaultName
    }

    /// The configured key: from the environment, or read from its file, which
    /// is created (0600, 32 random hexadecimal digits) when it does not exist.
    ///
    /// - Throws: `SettingsError` (exit 78) for a file that exists but does not
    ///   hold a key, or that cannot be created or read.
    public static func load(for settings: ServerSettings, logger: Logger) throws -> SourceKey {
        if let key = settings.sourceKey { return key }
        guard let path = path(for: settings) else { return SourceKey.random() }
        if settings.sourceKeyFile == nil, PostgresURL.isURL(settings.database) {
            logger.notice("""
                client networks are hashed under this node's own key file \(path); every node on one PostgreSQL \
                database needs the same key: set source_key_file or KBTD_SOURCE_KEY (docs/scaling-out.md)
                """)
        }
        do {
            return try loadOrCreate(path, logger: logger)
        } catch let failure as CreateFailure where failure.code == EROFS {
            // A read-only file system (the daemon serves read-only, ingest answers 503): a key for
            // this run only. Sources counted under it count once more after a restart, no more.
            logger.error("cannot create the source key file \(path): read-only file system; using a temporary key until restart")
            return SourceKey.random()
        } catch let failure as CreateFailure {
            throw SettingsError(message: "cannot create the source key file \(path): \(String(cString: strerror(failure.code))) "
                                + "(set source_key_file, or KBTD_SOURCE_KEY)")
        }
    }

    struct CreateFailure: Error { var code: Int32 }

    /// Reads the key at `path`, creating the file first when there is none. Two
    /// processes starting at once end up with the same key: the file is written
    /// under a temporary name and linked into place, which fails if it exists.
    static func loadOrCreate(_ path: String, logger: Logger) throws -> SourceKey {
        if let key = try read(path, logger: logger) { return key }
        let temporary = path + ".\(getpid()).tmp"
        unlink(temporary)  // left by a crashed process that had this pid
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CreateFailure(code: errno) }
        defer { unlink(temporary) }
        fchmod(fd, 0o600)
        let text = Array((SourceKey.random().hex + "\n").utf8)
        let written = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd)
        close(fd)
        guard written == text.count, synced == 0 else { throw CreateFailure(code: errno) }
        if link(temporary, path) != 0, errno != EEXIST { throw CreateFailure(code: errno) }
        guard let key = try read(path, logger: logger) else { throw CreateFailure(code: ENOENT) }
        logger.notice("created the source key file \(path) (keep it out of backups you share; docs/privacy.md)")
        return key
    }

    /// The key in the file at `path`, or nil when there is no file.
    private static func read(_ path: String, logger: Logger) throws -> SourceKey? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SettingsError(message: "cannot read the source key file \(path)")
        }
        guard let text = String(data: data, encoding: .utf8), let key = SourceKey(hex: text) else {
            throw SettingsError(message: "the source key file \(path) does not hold a key (32 hexadecimal digits); "
                                + "restore it, or remove it to start a new key")
        }
        var info = stat()
        if stat(path, &info) == 0, info.st_mode & 0o077 != 0 {
            logger.warning("the source key file \(path) is readable by others (mode \(String(info.st_mode & 0o777, radix: 8))); chmod 600 it")
        }
        return key
    }
}

/// The folder of a database file path.
enum DatabaseFolder {
    static func of(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let folder = String(path[..<slash])
        return folder.isEmpty ? "/" : folder
    }
}
