/// Settings that apply when `database` is a PostgreSQL URL (ignored for an SQLite file).
public struct PostgresSettings: Sendable, Equatable {
    /// Bound on how far this node's in-memory index may lag commits made by other
    /// nodes, seconds (`index_catch_up_seconds`); commit_log is polled twice per bound.
    public var indexCatchUpSeconds = 1.0
    /// Connections in this node's pool (`database_pool_size`): the writer, the catch-up, reads.
    public var poolSize = 4
    /// How long start-up waits for PostgreSQL to answer before exiting (`database_wait_seconds`; 0: exit at once).
    public var connectWaitSeconds = 0.0
    /// A file whose first line is the password (`database_password_file`), when the URL and
    /// `KBTD_DATABASE_PASSWORD` have none.
    public var passwordFile: String?

    public init() {}
}

import KBTDPostgres

extension PostgresSettings {
    /// Why `database` is an unusable PostgreSQL URL (nil: a file path, or a good URL).
    /// The message never contains the password.
    static func problem(_ database: String) -> String? {
        guard PostgresURL.isURL(database) else { return nil }
        do {
            _ = try PostgresURL(database)
            return nil
        } catch {
            return error.description
        }
    }
}
