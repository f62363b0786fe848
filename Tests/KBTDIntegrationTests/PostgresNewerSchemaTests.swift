import Foundation
@testable import KBTDPostgres
import Logging
import Testing

/// The PostgreSQL store refuses a database of a newer schema as the SQLite store does
/// (UpgradeFixtureTests): before any step, leaving it as it was, whether it would migrate or not.
@Suite("PostgreSQL: a database of a newer schema is refused untouched", .ownThreads)
struct PostgresNewerSchemaTests {
    @Test(.enabled(if: TestPostgres.available))
    func aNewerSchemaIsRefusedUntouched() async throws {
        let postgres = try TestPostgres()
        let database = PostgresDatabase(url: try PostgresURL(postgres.url), logger: Logger(label: "kbtd-test"))
        defer { database.close() }
        _ = try await PostgresTelemetryStore(database: database)
        let newer = PostgresSchema.latestVersion + 1
        try postgres.psql("kbtd", "INSERT INTO schema_migrations VALUES (\(newer), 'from a newer kbtd', 0)", user: "kbtd")
        let tables = try postgres.psql("kbtd", "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE schemaname = 'public'")
        for migrate in [true, false] {
            await #expect {
                _ = try await PostgresTelemetryStore(database: database, migrate: migrate)
            } throws: { error in
                guard let refusal = error as? PostgresSchema.NewerSchema, refusal.version == newer else { return false }
                return "\(refusal)" == "the PostgreSQL database has schema version \(newer), newer than this kbtd supports (\(PostgresSchema.latestVersion)); upgrade kbtd"
            }
        }
        #expect(try postgres.psql("kbtd", "SELECT MAX(version) FROM schema_migrations") == "\(newer)")
        #expect(try postgres.psql("kbtd", "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE schemaname = 'public'") == tables)
    }

    @Test(.enabled(if: TestPostgres.available))
    func aDatabaseWhoseStepsWereRenumberedIsRefusedUntouched() async throws {
        let postgres = try TestPostgres()
        let database = PostgresDatabase(url: try PostgresURL(postgres.url), logger: Logger(label: "kbtd-test"))
        defer { database.close() }
        _ = try await PostgresTelemetryStore(database: database)
        // As a development build of 2026-11-24 left it: the vote ledger recorded as version 6.
        let ledger = PostgresSchema.migrations[6].name
        try postgres.psql("kbtd", "DELETE FROM schema_migrations WHERE version > 6", user: "kbtd")
        try postgres.psql("kbtd", "UPDATE schema_migrations SET name = '\(ledger.replacingOccurrences(of: "'", with: "''"))' WHERE version = 6", user: "kbtd")
        await #expect {
            _ = try await PostgresTelemetryStore(database: database)
        } throws: { error in
            guard let refusal = error as? PostgresSchema.RenamedStep else { return false }
            return refusal.version == 6 && "\(refusal)".contains("is \"\(ledger)\", where this kbtd's is \"\(PostgresSchema.migrations[5].name)\"")
        }
        #expect(try postgres.psql("kbtd", "SELECT MAX(version) FROM schema_migrations") == "6", "no step ran")
    }
}
