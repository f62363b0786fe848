/// The ordered, versioned migration list. A database records the versions it
/// has applied in `schema_migrations`; opening runs the missing ones in order,
/// each in its own transaction (`migrator`). Never edit a shipped step: append a new one.
enum Schema {
    struct Migration: SchemaMigration {
        var version: Int
        var name: String
        var sql: String
    }

    static let migrations: [Migration] = [
        Migration(version: 1, name: "aggregate tables and seen batch ids", sql: """
            CREATE TABLE batches (
                batch_id     TEXT PRIMARY KEY,
                received_at  INTEGER NOT NULL,
                model        TEXT NOT NULL,
                os           TEXT NOT NULL,
                accepted     INTEGER NOT NULL,
                rejected     INTEGER NOT NULL
            ) WITHOUT ROWID;
            CREATE INDEX batches_received_at ON batches(received_at);

            CREATE TABLE height_counts (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                placement     TEXT NOT NULL,
                height_bin    REAL NOT NULL,
                count         INTEGER NOT NULL,
                PRIMARY KEY (model, os_major, language, orientation, keyboard_type, placement, height_bin)
            ) WITHOUT ROWID;

            CREATE TABLE animation_counts (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                event         TEXT NOT NULL,
                duration_ms   INTEGER NOT NULL,
                curve         INTEGER NOT NULL,
                count         INTEGER NOT NULL,
                PRIMARY KEY (model, os_major, language, orientation, keyboard_type, event, duration_ms, curve)
            ) WITHOUT ROWID;

            CREATE TABLE cold_start_counts (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                preloaded     INTEGER NOT NULL,
                bucket        INTEGER NOT NULL,
                bucket_ms     REAL NOT NULL,
                count         INTEGER NOT NULL,
                PRIMARY KEY (model, os_major, language, orientation, keyboard_type, preloaded, bucket)
            ) WITHOUT ROWID;

            CREATE TABLE safe_area_counts (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                safe_area_bin REAL NOT NULL,
                count         INTEGER NOT NULL,
                PRIMARY KEY (model, os_major, language, orientation, keyboard_type, safe_area_bin)
            ) WITHOUT ROWID;
            """),
        Migration(version: 2, name: "estimator votes and key sources (poisoning defence)", sql: """
            CREATE TABLE height_votes (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                height_bin    REAL NOT NULL,
                votes         INTEGER NOT NULL,
                PRIMARY KEY (model, os_major, language, orientation, keyboard_type, height_bin)
            ) WITHOUT ROWID;
            INSERT INTO height_votes
                SELECT model, os_major, language, orientation, keyboard_type, height_bin, count
                FROM height_counts WHERE placement = 'docked';

            CREATE TABLE key_sources (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                source        INTEGER NOT NULL,
                PRIMARY KEY (model, os_major, language, orientation, keyboard_type, source)
            ) WITHOUT ROWID;
            INSERT INTO key_sources
                SELECT DISTINCT model, os_major, language, orientation, keyboard_type, 0
                FROM height_counts WHERE placement = 'docked';
            """),
        Migration(version: 3, name: "key registry: first seen, admitted to the index (bounded keys)", sql: """
            CREATE TABLE keys (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                first_seen    INTEGER NOT NULL,
                admitted_at   INTEGER,
                PRIMARY KEY (model, os_major, language, orientation, keyboard_type)
            ) WITHOUT ROWID;
            INSERT INTO keys
                SELECT DISTINCT model, os_major, language, orientation, keyboard_type, strftime('%s','now'), NULL
                FROM animation_counts;
            UPDATE keys SET admitted_at = first_seen
                WHERE (model, os_major, language, orientation, keyboard_type) IN (
                    SELECT model, os_major, language, orientation, keyboard_type FROM key_sources
                    GROUP BY model, os_major, language, orientation, keyboard_type
                    HAVING COUNT(*) >= 3 OR MAX(source = 0) = 1);
            """),
        Migration(version: 4, name: "screens per model (screen+language level)", sql: """
            CREATE TABLE model_screens (
                model   TEXT NOT NULL,
                screen  TEXT NOT NULL,
                count   INTEGER NOT NULL,
                PRIMARY KEY (model, screen)
            ) WITHOUT ROWID;
            """),
        Migration(version: 5, name: "samples ingested per hour (dashboard)", sql: """
            -- One row per UTC hour (Unix seconds of its start) in which batches were stored;
            -- pruned with the seen batch ids (batch_retention_days).
            CREATE TABLE hourly_ingest (
                hour     INTEGER PRIMARY KEY,
                batches  INTEGER NOT NULL,
                samples  INTEGER NOT NULL,
                rejected INTEGER NOT NULL
            );
            INSERT INTO hourly_ingest
                SELECT received_at / 3600 * 3600, COUNT(*), SUM(accepted), SUM(rejected)
                FROM batches GROUP BY received_at / 3600;
            """),
        Migration(version: 6, name: "keyed-sources: retire unkeyed source hashes, last-seen times", sql: """
            -- Sources were an unkeyed hash of the client's address, which anyone can reverse by
            -- hashing every address. They cannot be re-keyed (the address is not known), so each
            -- becomes a random negative identifier: every key keeps its count of distinct sources.
            -- From now on a network's identifier is keyed (positive) and kept source_retention_days
            -- after seen_at, its last report of the key; 0 is a trusted peer.
            ALTER TABLE key_sources ADD COLUMN seen_at INTEGER;
            UPDATE key_sources SET source = -((random() & 9223372036854775807) | 1) WHERE source <> 0;
            """),
        Migration(version: 7, name: "the day's vote ledger and new-key quotas (kept across restarts)", sql: """
            -- Abuse budgets spent per UTC day (days since 1970), so a restart forgets nothing:
            -- votes granted per (source network, key, height bin), and new keys per source network.
            -- Sources and groups are the same hashed network identifiers as key_sources.source;
            -- rows of earlier days are deleted at the first commit of a new day.
            CREATE TABLE vote_ledger (
                day           INTEGER NOT NULL,
                source        INTEGER NOT NULL,
                series        INTEGER NOT NULL,
                height_bin    INTEGER NOT NULL,
                network_group INTEGER NOT NULL,
                reserve       INTEGER NOT NULL,
                votes         INTEGER NOT NULL,
                PRIMARY KEY (day, source, series, height_bin)
            ) WITHOUT ROWID;
            CREATE TABLE key_quota (
                day     INTEGER NOT NULL,
                source  INTEGER NOT NULL,
                created INTEGER NOT NULL,
                PRIMARY KEY (day, source)
            ) WITHOUT ROWID;
            """),
        Migration(version: 8, name: "index capacity: last seen per key (idle keys age out)", sql: """
            -- Unix seconds of the last commit that reported the key, written at most once a
            -- UTC day per key; untrusted keys idle past idle_key_retention_days are deleted.
            ALTER TABLE keys ADD COLUMN last_seen INTEGER NOT NULL DEFAULT 0;
            UPDATE keys SET last_seen = first_seen;
            CREATE INDEX keys_by_last_seen ON keys(last_seen);
            """),
        Migration(version: 9, name: "point releases: docked samples and votes per OS release", sql: """
            -- The docked height bins of each key again, per OS release (the minor of device.os:
            -- 2 for 26.2, 0 for 26): the estimator answers per release where one moved keyboards.
            -- Counts from before this version have no release; they stay in height_counts and
            -- height_votes, which keep every count per OS major as before.
            CREATE TABLE release_counts (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                os_minor      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                height_bin    REAL NOT NULL,
                samples       INTEGER NOT NULL,
                votes         INTEGER NOT NULL,
                PRIMARY KEY (model, os_major, os_minor, language, orientation, keyboard_type, height_bin)
            ) WITHOUT ROWID;
            """),
        Migration(version: 10, name: "ageing votes: estimator votes per UTC day of receipt", sql: """
            -- The estimator's votes of each key again, per UTC day the batch arrived (Unix seconds
            -- / 86400): the last vote_horizon_days of them may outvote a key's all-time votes.
            -- Votes from before this version have no day; they stay in height_votes.
            CREATE TABLE day_votes (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                day           INTEGER NOT NULL,
                height_bin    REAL NOT NULL,
                votes         INTEGER NOT NULL,
                PRIMARY KEY (model, os_major, language, orientation, keyboard_type, day, height_bin)
            ) WITHOUT ROWID;
            """),
        Migration(version: 11, name: "release sources: the networks behind each key on each OS release", sql: """
            -- Which sources reported each key on each OS release, kept as key_sources keeps them per
            -- key: at most 8 per (key, release); 0 a trusted peer; a network's keyed hash kept
            -- source_retention_days after seen_at, then retired. A release answers on its own only
            -- with min_sources of its own. Releases stored before this version inherit their key's
            -- sources (the support they were served on until now), so an upgrade changes no answer.
            CREATE TABLE release_sources (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                os_minor      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                source        INTEGER NOT NULL,
                seen_at       INTEGER,
                PRIMARY KEY (model, os_major, os_minor, language, orientation, keyboard_type, source)
            ) WITHOUT ROWID;
            INSERT INTO release_sources
                SELECT r.model, r.os_major, r.os_minor, r.language, r.orientation, r.keyboard_type, s.source, s.seen_at
                FROM (SELECT DISTINCT model, os_major, os_minor, language, orientation, keyboard_type FROM release_counts) r
                JOIN key_sources s ON s.model = r.model AND s.os_major = r.os_major AND s.language = r.language
                    AND s.orientation = r.orientation AND s.keyboard_type = r.keyboard_type;
            """),
        Migration(version: 12, name: "day sources: the networks behind each key's votes per UTC day", sql: """
            -- Which sources' votes weighed on each key on each UTC day of receipt (a row per weighed
            -- network, so the day's vote ledger bounds them); 0 a trusted peer; a network's keyed hash is deleted source_retention_days
            -- after its day, and with the day's votes. A key's recent votes outvote its all-time
            -- votes only with min_sources networks of their own. Days stored before this version
            -- inherit their key's sources (the support they were served on until now), so an
            -- upgrade changes no answer.
            CREATE TABLE day_sources (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                day           INTEGER NOT NULL,
                source        INTEGER NOT NULL,
                PRIMARY KEY (model, os_major, language, orientation, keyboard_type, day, source)
            ) WITHOUT ROWID;
            INSERT INTO day_sources
                SELECT d.model, d.os_major, d.language, d.orientation, d.keyboard_type, d.day, s.source
                FROM (SELECT DISTINCT model, os_major, language, orientation, keyboard_type, day FROM day_votes) d
                JOIN key_sources s ON s.model = d.model AND s.os_major = d.os_major AND s.language = d.language
                    AND s.orientation = d.orientation AND s.keyboard_type = d.keyboard_type;
            """),
        Migration(version: 13, name: "screen variants: docked samples, votes and sources per reported screen", sql: """
            -- The docked height bins of each key again, per screen the device reported
            -- (device.screen, portrait points like 320x693): a Display Zoom phone renders another
            -- screen and has another keyboard height, answered from its own data where it has a
            -- level's support. At most 4 screens per key, 8 sources per (key, screen); a network's
            -- keyed hash retires as in release_sources. Counts from before this version have no
            -- screen; they stay in height_counts and height_votes, as every count does.
            CREATE TABLE screen_counts (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                screen        TEXT NOT NULL,
                height_bin    REAL NOT NULL,
                samples       INTEGER NOT NULL,
                votes         INTEGER NOT NULL,
                PRIMARY KEY (model, os_major, language, orientation, keyboard_type, screen, height_bin)
            ) WITHOUT ROWID;
            CREATE TABLE screen_sources (
                model         TEXT NOT NULL,
                os_major      INTEGER NOT NULL,
                language      TEXT NOT NULL,
                orientation   TEXT NOT NULL,
                keyboard_type TEXT NOT NULL,
                screen        TEXT NOT NULL,
                source        INTEGER NOT NULL,
                seen_at       INTEGER,
                PRIMARY KEY (model, os_major, language, orientation, keyboard_type, screen, source)
            ) WITHOUT ROWID;
            """),
    ]

    /// `PRAGMA application_id` of a kbtd database ("kbtd" in ASCII): tells
    /// kbtd's files from other applications' SQLite files.
    static let applicationID: Int32 = 0x6B62_7464

    static let migrator = SchemaMigrator(migrations)

    static var latestVersion: Int { migrator.latestVersion }
    /// The oldest schema a read-only store reads as it is: version 1 has no estimator votes.
    static let oldestReadableVersion = 2

    /// The first version whose `key_sources` hold keyed hashes (or retired identifiers), never an unkeyed address hash.
    static let keyedSourcesVersion = 6
}
