import ArgumentParser
import Foundation
import KBTDPostgres
import KBTDServer
import KBTDStore

/// `kbtd backup DEST`: a consistent copy of the SQLite database while the daemon runs
/// (`SQLiteBackup`), and what was done about the source key (docs/storage.md, "Backups").
struct Backup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy the SQLite database consistently while the daemon runs and ingests (never overwrites DEST).")

    @Option(help: "SQLite database file. Default: KBTD_DATABASE, else the config file's, else kbtd.sqlite.") var database: String?
    @Option(help: "Config file, for database and source_key_file (default: KBTD_CONFIG).") var config: String?
    @Flag(help: "Also copy the source key file, as source.key beside DEST.") var withSourceKey = false
    @Argument(help: "The new file to write (refused if it exists).") var destination: String

    func run() async throws {
        var flags: [String: String] = [:]
        if let database { flags["database"] = database }
        let settings = try resolveSettings(config: config, flags: flags)
        let source = settings.database
        let keyFile = SourceKeyFile.path(for: settings)
        guard !PostgresURL.isURL(source) else {
            throw fail("""
                kbtd backup copies SQLite files; \(loggableDatabase(source)) is PostgreSQL: run \
                `pg_dump --format=custom --file kbtd.dump 'URL'` (schema and data) and keep the source key \
                \(keyFile.map { "file \($0)" } ?? "(KBTD_SOURCE_KEY)") with it; docs/storage.md, "Backups"
                """, code: ExitStatus.usage)
        }
        let keyBeside = DatabaseFile.parent(of: destination) + "/" + SourceKeyFile.defaultName
        // Refused before anything is copied: a backup asked to bring the key must be able to.
        if withSourceKey, let keyFile, FileManager.default.fileExists(atPath: keyBeside),
           FileManager.default.contents(atPath: keyBeside) != FileManager.default.contents(atPath: keyFile) {
            throw fail("--with-source-key: \(keyBeside) exists and holds another key; back up into another folder",
                       code: ExitStatus.cannotCreate)
        }
        let start = ContinuousClock.now
        let copied: SQLiteBackup.Copied
        do {
            copied = try SQLiteBackup.copy(from: source, to: destination)
        } catch {
            switch error {
            case .sourceMissing: throw fail("\(error) (set --database or KBTD_DATABASE)", code: ExitStatus.noInput)
            case .destinationExists, .cannotCreate: throw fail(error.description, code: ExitStatus.cannotCreate)
            case .notKbtd: throw fail(error.description, code: ExitStatus.dataError)
            case .sqlite: throw fail("backup of \(source) failed, no copy left: \(error)", code: ExitStatus.ioError)
            }
        }
        let mebibytes = (Double(copied.bytes) / 1_048_576 * 10).rounded() / 10
        print("backed up \(source) to \(destination): \(copied.pages) pages, \(mebibytes) MiB, schema version \(copied.schemaVersion), in \(ContinuousClock.now - start)")
        print(try sourceKeyLine(keyFile: keyFile, keyBeside: keyBeside))
        print("check it with: kbtd check \(destination)")
    }

    /// Copies the key when asked, and says what happened to it either way.
    private func sourceKeyLine(keyFile: String?, keyBeside: String) throws -> String {
        guard let keyFile else {
            return "source key not copied: it comes from KBTD_SOURCE_KEY, not a file; keep that value with the backup"
        }
        guard FileManager.default.fileExists(atPath: keyFile) else {
            return "source key not copied: there is no key file \(keyFile) yet (the daemon creates it at first start)"
        }
        let sameKeyBeside = FileManager.default.contents(atPath: keyBeside).map { $0 == FileManager.default.contents(atPath: keyFile) }
        guard withSourceKey else {
            if let sameKeyBeside {
                return "source key not copied (\(keyFile)): a daemon serving the copy where it is uses \(keyBeside), "
                    + (sameKeyBeside ? "the same key" : "another key (\(Self.withoutKey))")
            }
            return "source key not copied (\(keyFile)); keep it apart from the copy, or pass --with-source-key. "
                + "A daemon serving the copy without it creates a new key: \(Self.withoutKey)"
        }
        if sameKeyBeside != nil {
            return "source key: \(keyBeside) already holds the same key as \(keyFile)"
        }
        do {
            try copyKey(keyFile, to: keyBeside)
        } catch {
            throw fail("the copy is made, but the source key could not be copied to \(keyBeside): \(error)", code: ExitStatus.cannotCreate)
        }
        return "source key copied to \(keyBeside) (mode 0600); a backup with its key can reverse client networks: store it as such"
    }

    /// What serving a copy under another key than the one it was written with changes.
    static let withoutKey = "every count and each key's number of sources stay, but a client network that already "
        + "reported a key counts as one more source of it (up to 8 a key), and each network's vote and new-key "
        + "budgets start over for the day"

    /// Writes the key file's bytes to a new file, mode 0600, synced.
    private func copyKey(_ from: String, to: String) throws {
        guard let data = FileManager.default.contents(atPath: from) else { throw CocoaError(.fileReadUnknown) }
        let fd = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(fd) }
        fchmod(fd, 0o600)
        let written = data.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == data.count, fsync(fd) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }
}
