/// A step of an ordered migration list: its version (1, 2, 3, ...) and name,
/// recorded in `schema_migrations` once applied.
public protocol SchemaMigration: Sendable {
    var version: Int { get }
    var name: String { get }
}

/// An ordered, versioned migration list and what a database at some version
/// still needs: the one rule both schemas follow (SQLite's `Schema`,
/// PostgreSQL's `PostgresSchema`). Each store runs a pending step, with its
/// `schema_migrations` row, in one transaction of its own, so a crash leaves a
/// version applied whole or not at all. GRDB's `DatabaseMigrator` is the model.
///
///     for migration in try Schema.migrator.pending(after: applied) { ... }
public struct SchemaMigrator<Migration: SchemaMigration>: Sendable {
    public let migrations: [Migration]

    public init(_ migrations: [Migration]) {
        precondition(migrations.map(\.version) == Array(1...migrations.count), "versions are 1, 2, 3... with no gap")
        self.migrations = migrations
    }

    public var latestVersion: Int { migrations.last?.version ?? 0 }

    /// The steps a database at version `applied` lacks, in order; throws for a
    /// database a newer kbtd wrote (it is refused untouched).
    public func pending(after applied: Int) throws(NewerSchemaVersion) -> ArraySlice<Migration> {
        guard applied <= latestVersion else { throw NewerSchemaVersion(version: applied, supported: latestVersion) }
        return migrations[applied...]
    }

    /// The first applied step whose recorded name is not this list's name for its version: a
    /// database written by a development build whose steps were numbered differently (version 6
    /// was the vote ledger on main for a few minutes before it became 7). Running the list's later
    /// steps on it would fail halfway or skip one, so the store refuses it untouched.
    public func renamedStep(in applied: [(version: Int, name: String)]) -> (version: Int, recorded: String, known: String)? {
        for step in applied where step.version >= 1 && step.version <= latestVersion {
            let known = migrations[step.version - 1].name
            if step.name != known { return (step.version, step.name, known) }
        }
        return nil
    }
}

/// A database whose schema version is newer than this kbtd knows.
public struct NewerSchemaVersion: Error, Sendable {
    public var version: Int
    public var supported: Int
}
