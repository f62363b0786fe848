import KBTDStore

/// The PostgreSQL dialect of kbtd's ordered migration list: the same
/// versions, names, tables and columns as the SQLite schema (`Schema` in
/// KBTDStore), with PostgreSQL types (BIGINT counts, DOUBLE PRECISION bins).
/// Every primary key starts with `model`, so the tables can be distributed by
/// model (Citus-style sharding) without a schema change.
///
/// Besides the numbered steps, the bookkeeping step creates `schema_migrations`
/// and `commit_log` (each commit's index delta, read by the other nodes).
public enum PostgresSchema {
    struct Migration: SchemaMigration {
        var version: Int
        var name: String
        var sql: [String]
    }

    /// `pg_advisory_xact_lock` key ("kbtd" in ASCII): two nodes starting at once migrate one after the other.
    static let advisoryLock: Int64 = 0x6B62_7464

    static let bookkeeping = [
        """
        CREATE TABLE IF NOT EXISTS schema_migrations (
            version    INTEGER PRIMARY KEY,
            name       TEXT NOT NULL,
            applied_at BIGINT NOT NULL
        )
        """,
        // One row per commit that changed some node's in-memory index: the other
        // nodes poll it (by transaction id, see IndexCatchUp) to catch up.
        """
        CREATE TABLE IF NOT EXISTS commit_log (
            id         BIGSERIAL PRIMARY KEY,
            xid        XID8 NOT NULL DEFAULT pg_current_xact_id(),
            node       TEXT NOT NULL,
            created_at BIGINT NOT NULL,
            delta      TEXT NOT NULL
        )
        """,
        "CREATE INDEX IF NOT EXISTS commit_log_created_at ON commit_log(created_at)",
        // Databases `kbtd migrate` imported: a second import of the same one is refused.
        """
        CREATE TABLE IF NOT EXISTS imports (
            source      TEXT PRIMARY KEY,
            imported_at BIGINT NOT NULL,
            batches     BIGINT NOT NULL,
            samples     BIGINT NOT NULL
        )
        """,
    ]

    static let migrations: [Migration] = [
        Migration(version: 1, name: "aggregate tables and seen batch ids", sql: [
            """
            CREATE TABLE batches (
                batch_id     TEXT PRIMARY KEY,
                received_at  BIGINT NOT NULL,
                model        TEXT NOT NULL,
                os           TEXT NOT NULL,
                accepted     BIGINT NOT NULL,
                rejected     BIGINT NOT NULL
            )
            """,
            "CREATE INDEX batches_received_at ON batches(received_at)",
            """
            CREATE TABLE height_counts (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                placement     TEXT NOT NULL,
                height_bin    DOUBLE PRECISION NOT NULL,
                count         BIGINT NOT NULL,
                PRIMARY KEY (model, os_major, language, orientation, keyboard_type, placement, height_bin)
            )
            """,
            """
            CREATE TABLE animation_counts (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                event         TEXT NOT NULL,
                duration_ms   INTEGER NOT NULL,
                curve         INTEGER NOT NULL,
                count         BIGINT NOT NULL,
                PRIMARY KEY (model, os_major, language, orientation, keyboard_type, event, duration_ms, curve)
            )
            """,
            """
            CREATE TABLE cold_start_counts (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                preloaded     INTEGER NOT NULL,
                bucket        INTEGER NOT NULL,
                bucket_ms     DOUBLE PRECISION NOT NULL,
                count         BIGINT NOT NULL,
                PRIMARY KEY (model, os_major, language, orientation, keyboard_type, preloaded, bucket)
            )
            """,
            """
            CREATE TABLE safe_area_counts (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                safe_area_bin DOUBLE PRECISION NOT NULL,
                count         BIGINT NOT NULL,
                PRIMARY KEY (model, os_major, language, orientation, keyboard_type, safe_area_bin)
            )
            """,
        ]),
        Migration(version: 2, name: "estimator votes and key sources (poisoning defence)", sql: [
            """
            CREATE TABLE height_votes (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                height_bin    DOUBLE PRECISION NOT NULL,
                votes         BIGINT NOT NULL,
                PRIMARY KEY (model, os_major, language, orientation, keyboard_type, height_bin)
            )
            """,
            """
            INSERT INTO height_votes
                SELECT model, os_major, language, orientation, keyboard_type, height_bin, count
                FROM height_counts WHERE placement = 'docked'
            """,
            """
            CREATE TABLE key_sources (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                source        BIGINT NOT NULL,
                PRIMARY KEY (model, os_major, language, orientation, keyboard_type, source)
            )
            """,
            """
            INSERT INTO key_sources
                SELECT DISTINCT model, os_major, language, orientation, keyboard_type, 0
                FROM height_counts WHERE placement = 'docked'
            """,
        ]),
        Migration(version: 3, name: "key registry: first seen, admitted to the index (bounded keys)", sql: [
            """
            CREATE TABLE keys (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                first_seen    BIGINT NOT NULL,
                admitted_at   BIGINT,
                PRIMARY KEY (model, os_major, language, orientation, keyboard_type)
            )
            """,
            """
            INSERT INTO keys
                SELECT DISTINCT model, os_major, language, orientation, keyboard_type,
                       extract(epoch FROM now())::bigint, NULL::bigint
                FROM animation_counts
            """,
            """
            UPDATE keys SET admitted_at = first_seen
                WHERE (model, os_major, language, orientation, keyboard_type) IN (
                    SELECT model, os_major, language, orientation, keyboard_type FROM key_sources
                    GROUP BY model, os_major, language, orientation, keyboard_type
                    HAVING COUNT(*) >= 3 OR bool_or(source = 0))
            """,
        ]),
        Migration(version: 4, name: "screens per model (screen+language level)", sql: [
            """
            CREATE TABLE model_screens (
                model   TEXT NOT NULL,
                screen  TEXT NOT NULL,
                count   BIGINT NOT NULL,
                PRIMARY KEY (model, screen)
            )
            """,
        ]),
        Migration(version: 5, name: "samples ingested per hour (dashboard)", sql: [
            """
            CREATE TABLE hourly_ingest (
                hour     BIGINT PRIMARY KEY,
                batches  BIGINT NOT NULL,
                samples  BIGINT NOT NULL,
                rejected BIGINT NOT NULL
            )
            """,
            """
            INSERT INTO hourly_ingest
                SELECT received_at / 3600 * 3600, COUNT(*), SUM(accepted), SUM(rejected)
                FROM batches GROUP BY received_at / 3600
            """,
        ]),
        // Sources were an unkeyed hash of the client's address, which anyone can reverse by hashing
        // every address. They cannot be re-keyed (the address is not known), so each becomes a random
        // negative identifier: every key keeps its count of distinct sources. From now on a network's
        // identifier is keyed (positive) and kept source_retention_days after seen_at; 0 is a trusted peer.
        Migration(version: 6, name: "keyed-sources: retire unkeyed source hashes, last-seen times", sql: [
            "ALTER TABLE key_sources ADD COLUMN seen_at BIGINT",
            "UPDATE key_sources SET source = \(PostgresSQL.retiredSource) WHERE source <> 0",
        ]),
        Migration(version: 7, name: "the day's vote ledger and new-key quotas (kept across restarts)", sql: [
            """
            CREATE TABLE vote_ledger (
                day           BIGINT NOT NULL,
                source        BIGINT NOT NULL,
                series        BIGINT NOT NULL,
                height_bin    BIGINT NOT NULL,
                network_group BIGINT NOT NULL,
                reserve       BIGINT NOT NULL,
                votes         BIGINT NOT NULL,
                PRIMARY KEY (day, source, series, height_bin)
            )
            """,
            """
            CREATE TABLE key_quota (
                day     BIGINT NOT NULL,
                source  BIGINT NOT NULL,
                created BIGINT NOT NULL,
                PRIMARY KEY (day, source)
            )
            """,
        ]),
        Migration(version: 8, name: "index capacity: last seen per key (idle keys age out)", sql: [
            "ALTER TABLE keys ADD COLUMN last_seen BIGINT NOT NULL DEFAULT 0",
            "UPDATE keys SET last_seen = first_seen",
            "CREATE INDEX keys_by_last_seen ON keys(last_seen)",
        ]),
        Migration(version: 9, name: "point releases: docked samples and votes per OS release", sql: [
            """
            CREATE TABLE release_counts (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                os_minor      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                height_bin    DOUBLE PRECISION NOT NULL,
                samples       BIGINT NOT NULL,
                votes         BIGINT NOT NULL,
                PRIMARY KEY (model, os_major, os_minor, language, orientation, keyboard_type, height_bin)
            )
            """,
        ]),
        Migration(version: 10, name: "ageing votes: estimator votes per UTC day of receipt", sql: [
            """
            CREATE TABLE day_votes (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                day           INTEGER NOT NULL,
                height_bin    DOUBLE PRECISION NOT NULL,
                votes         BIGINT NOT NULL,
                PRIMARY KEY (model, os_major, language, orientation, keyboard_type, day, height_bin)
            )
            """,
        ]),
        Migration(version: 11, name: "release sources: the networks behind each key on each OS release", sql: [
            // As SQLite's step 11: key_sources per (key, OS release); releases stored before
            // this version inherit their key's sources, so an upgrade changes no answer.
            """
            CREATE TABLE release_sources (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                os_minor      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                source        BIGINT NOT NULL,
                seen_at       BIGINT,
                PRIMARY KEY (model, os_major, os_minor, language, orientation, keyboard_type, source)
            )
            """,
            """
            INSERT INTO release_sources
                SELECT r.model, r.os_major, r.os_minor, r.language, r.orientation, r.keyboard_type, s.source, s.seen_at
                FROM (SELECT DISTINCT model, os_major, os_minor, language, orientation, keyboard_type FROM release_counts) r
                JOIN key_sources s ON s.model = r.model AND s.os_major = r.os_major AND s.language = r.language
                    AND s.orientation = r.orientation AND s.keyboard_type = r.keyboard_type
            """,
        ]),
        Migration(version: 12, name: "day sources: the networks behind each key's votes per UTC day", sql: [
            // As SQLite's step 12: the sources whose votes weighed per (key, day); days stored before this
            // version inherit their key's sources, so an upgrade changes no answer.
            """
            CREATE TABLE day_sources (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                day           INTEGER NOT NULL,
                source        BIGINT NOT NULL,
                PRIMARY KEY (model, os_major, language, orientation, keyboard_type, day, source)
            )
            """,
            """
            INSERT INTO day_sources
                SELECT d.model, d.os_major, d.language, d.orientation, d.keyboard_type, d.day, s.source
                FROM (SELECT DISTINCT model, os_major, language, orientation, keyboard_type, day FROM day_votes) d
                JOIN key_sources s ON s.model = d.model AND s.os_major = d.os_major AND s.language = d.language
                    AND s.orientation = d.orientation AND s.keyboard_type = d.keyboard_type
            """,
        ]),
        Migration(version: 13, name: "screen variants: docked samples, votes and sources per reported screen", sql: [
            // As SQLite's step 13: the docked bins of each key again per reported screen (Display Zoom),
            // and up to 8 sources per (key, screen). Counts from before this version have no screen.
            """
            CREATE TABLE screen_counts (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                screen        TEXT NOT NULL,
                height_bin    DOUBLE PRECISION NOT NULL,
                samples       BIGINT NOT NULL,
                votes         BIGINT NOT NULL,
                PRIMARY KEY (model, os_major, language, orientation, keyboard_type, screen, height_bin)
            )
            """,
            """
            CREATE TABLE screen_sources (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                screen        TEXT NOT NULL,
                source        BIGINT NOT NULL,
                seen_at       BIGINT,
                PRIMARY KEY (model, os_major, language, orientation, keyboard_type, screen, source)
            )
            """,
        ]),
    ]

    static let migrator = SchemaMigrator(migrations)

    static var latestVersion: Int { migrator.latestVersion }
}
