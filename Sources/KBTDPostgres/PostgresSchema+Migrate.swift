import KBTDStore
import Logging
import PostgresNIO

/// Applying `PostgresSchema.migrations` to a database, and what refuses one.
extension PostgresSchema {
    /// A database whose schema is newer than this kbtd knows.
    public struct NewerSchema: KBTDDecision, CustomStringConvertible {
        public var version: Int
        public var description: String {
            "the PostgreSQL database has schema version \(version), newer than this kbtd supports (\(PostgresSchema.latestVersion)); upgrade kbtd"
        }
    }

    /// A database whose recorded step `version` is not this kbtd's step of that version (a
    /// development build numbered its steps otherwise): refused before any step runs.
    public struct RenamedStep: KBTDDecision, CustomStringConvertible {
        public var version: Int
        public var recorded: String
        public var known: String
        public var description: String {
            "the PostgreSQL database's schema version \(version) is \"\(recorded)\", where this kbtd's is \"\(known)\" "
                + "(written by a development build whose migrations were renumbered)"
        }
    }

    /// Applies the missing steps, each in its own transaction under the
    /// advisory lock, re-reading the applied version inside the lock so a
    /// second node starting at the same time finds the work done.
    static func migrate(_ database: PostgresDatabase) async throws {
        let logger = database.logger
        // Up to date (the usual start): no lock, no DDL, so a node role with only
        // SELECT/INSERT/UPDATE/DELETE rights starts (docs/scaling-out.md, roles).
        let applied = try await appliedVersion(database)
        guard applied != latestVersion else { return }
        let pending: ArraySlice<Migration>
        do {
            pending = try migrator.pending(after: applied)
        } catch {
            throw NewerSchema(version: error.version)
        }
        if applied > 0 {
            let recorded = try await database.withConnection { connection in
                var steps: [(version: Int, name: String)] = []
                for try await (version, name) in try await connection.query(
                    "SELECT version::bigint, name FROM schema_migrations ORDER BY version", logger: logger).decode((Int, String).self) {
                    steps.append((version, name))
                }
                return steps
            }
            if let renamed = migrator.renamedStep(in: recorded) {
                throw RenamedStep(version: renamed.version, recorded: renamed.recorded, known: renamed.known)
            }
        }
        for migration in pending {
            let applied = try await database.withTransaction { connection -> Bool in
                try await connection.query("SELECT pg_advisory_xact_lock(\(advisoryLock))", logger: logger)
                for sql in bookkeeping { try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger) }
                var current = 0
                for try await version in try await connection.query(
                    "SELECT COALESCE(MAX(version), 0)::bigint FROM schema_migrations", logger: logger).decode(Int.self) {
                    current = version
                }
                guard current <= latestVersion else { throw NewerSchema(version: current) }
                guard current < migration.version else { return false }
                for sql in migration.sql { try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger) }
                try await connection.query("""
                    INSERT INTO schema_migrations(version, name, applied_at)
                    VALUES (\(migration.version), \(migration.name), extract(epoch FROM now())::bigint)
                    """, logger: logger)
                return true
            }
            if applied { logger.notice("PostgreSQL schema: applied migration \(migration.version) (\(migration.name))") }
        }
    }

    /// The applied schema version (0 for an empty database).
    static func appliedVersion(_ database: PostgresDatabase) async throws -> Int {
        try await database.withConnection { connection in
            var exists = false
            for try await found in try await connection.query(
                "SELECT to_regclass('schema_migrations') IS NOT NULL", logger: database.logger).decode(Bool.self) {
                exists = found
            }
            guard exists else { return 0 }
            var version = 0
            for try await value in try await connection.query(
                "SELECT COALESCE(MAX(version), 0)::bigint FROM schema_migrations", logger: database.logger).decode(Int.self) {
                version = value
            }
            return version
        }
    }
}
