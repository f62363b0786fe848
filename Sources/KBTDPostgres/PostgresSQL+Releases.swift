import KBTDCore
import PostgresNIO

extension PostgresSQL {
    /// Docked samples and votes per OS release (`release_counts`, schema v9).
    static func upsertReleaseCounts(_ rows: [(key: ReleaseBin, value: ReleaseCount)]) -> PostgresQuery {
        var keys = KeyArrays(), minors: [Int] = [], bins: [Double] = [], samples: [Int] = [], votes: [Int] = []
        for (key, count) in rows {
            keys.append(key.series); minors.append(key.minor); bins.append(HeightBin.points(key.halfPoints))
            samples.append(Int(count.samples)); votes.append(Int(count.votes))
        }
        let b = SQLBinds()
        let sql = """
            INSERT INTO release_counts(\(keyColumns), os_minor, height_bin, samples, votes)
            SELECT * FROM unnest(\(keys.unnestArguments(b)), \(b(minors))::int[], \(b(bins))::float8[], \(b(samples))::bigint[],
                                 \(b(votes))::bigint[])
            ON CONFLICT (\(keyColumns), os_minor, height_bin) DO UPDATE
            SET samples = release_counts.samples + excluded.samples, votes = release_counts.votes + excluded.votes
            """
        return b.query(sql)
    }

    /// Which sources reported each (key, release) (`release_sources`, schema v11): up to 8 per
    /// (key, release), as `insertKeySources` per key; a row already there is not touched (its
    /// `seen_at` is the first report; it retires with its key's row). Returns the rows it added
    /// (what the index counts, `ReleaseSupport`): key columns, os_minor, source.
    static func insertReleaseSources(_ rows: [(ReleaseKey, SourceID)], seenAt: Int64) -> PostgresQuery {
        var keys = KeyArrays(), minors: [Int] = [], sources: [Int] = [], seen: [Int] = []
        for (key, source) in rows {
            keys.append(key.series); minors.append(key.minor); sources.append(Int(Int64(bitPattern: source.value)))
            seen.append(source.isNetworkHash ? Int(seenAt) : -1)
        }
        let b = SQLBinds()
        let sql = """
            INSERT INTO release_sources(\(keyColumns), os_minor, source, seen_at)
            SELECT u.model, u.os_major, u.language, u.orientation, u.keyboard_type, u.os_minor, u.source, NULLIF(u.seen_at, -1)
            FROM unnest(\(keys.unnestArguments(b)), \(b(minors))::int[], \(b(sources))::bigint[], \(b(seen))::bigint[])
                AS u(model, os_major, language, orientation, keyboard_type, os_minor, source, seen_at)
            WHERE (SELECT COUNT(*) FROM release_sources s WHERE s.model = u.model AND s.os_major = u.os_major
                   AND s.language = u.language AND s.orientation = u.orientation AND s.keyboard_type = u.keyboard_type
                   AND s.os_minor = u.os_minor AND s.source <> u.source) < 8
            ON CONFLICT (\(keyColumns), os_minor, source) DO NOTHING
            RETURNING \(keyColumns), os_minor, source
            """
        return b.query(sql)
    }

    /// Each release of the keys holding more than `limit`, with its docked samples, distinct
    /// sources and whether one is a trusted peer (as `SQLiteTelemetryStore.releaseStandings`):
    /// key columns, os_minor, samples, sources, trusted. Other keys give no rows.
    static func releaseStandings(_ keys: [SeriesKey], limit: Int) -> PostgresQuery {
        var arrays = KeyArrays()
        keys.forEach { arrays.append($0) }
        let b = SQLBinds()
        let sql = """
            WITH k AS (SELECT * FROM unnest(\(arrays.unnestArguments(b)))
                       AS k(model, os_major, language, orientation, keyboard_type)),
            r AS (SELECT \(keyColumns), os_minor, SUM(samples)::bigint AS samples, 0::bigint AS sources, false AS trusted
                  FROM release_counts JOIN k USING (\(keyColumns)) GROUP BY \(keyColumns), os_minor
                  UNION ALL
                  SELECT \(keyColumns), os_minor, 0::bigint, COUNT(*)::bigint, bool_or(source = 0)
                  FROM release_sources JOIN k USING (\(keyColumns)) GROUP BY \(keyColumns), os_minor),
            crowded AS (SELECT \(keyColumns) FROM r GROUP BY \(keyColumns)
                        HAVING COUNT(DISTINCT os_minor) > \(b(limit))::int)
            SELECT \(keyColumns), os_minor, SUM(samples)::bigint, MAX(sources)::bigint, bool_or(trusted)
            FROM r JOIN crowded USING (\(keyColumns)) GROUP BY \(keyColumns), os_minor
            """
        return b.query(sql)
    }

    /// Drops the rows of some (key, release)s from `release_counts` and `release_sources`.
    static func dropReleases(_ releases: [ReleaseKey], table: String) -> PostgresQuery {
        var keys = KeyArrays(), minors: [Int] = []
        for release in releases {
            keys.append(release.series)
            minors.append(release.minor)
        }
        let b = SQLBinds()
        let sql = """
            DELETE FROM \(table) WHERE (\(keyColumns), os_minor) IN (SELECT * FROM unnest(\(keys.unnestArguments(b)), \(b(minors))::int[]))
            """
        return b.query(sql)
    }

    /// The sources whose votes weighed on each key per day (`day_sources`, schema v12), as the SQLite store keeps them.
    static func insertDaySources(_ rows: [(DayKey, SourceID)]) -> PostgresQuery {
        var keys = KeyArrays(), days: [Int] = [], sources: [Int] = []
        for (key, source) in rows {
            keys.append(key.series); days.append(key.day); sources.append(Int(Int64(bitPattern: source.value)))
        }
        let b = SQLBinds()
        let sql = """
            INSERT INTO day_sources(\(keyColumns), day, source)
            SELECT u.model, u.os_major, u.language, u.orientation, u.keyboard_type, u.day, u.source
            FROM unnest(\(keys.unnestArguments(b)), \(b(days))::int[], \(b(sources))::bigint[])
                AS u(model, os_major, language, orientation, keyboard_type, day, source)
            ON CONFLICT (\(keyColumns), day, source) DO NOTHING
            """
        return b.query(sql)
    }

    /// Votes per UTC day (`day_votes`, schema v10).
    static func upsertDayVotes(_ rows: [(key: DayVoteBin, value: Int64)]) -> PostgresQuery {
        var keys = KeyArrays(), days: [Int] = [], bins: [Double] = [], votes: [Int] = []
        for (key, count) in rows {
            keys.append(key.series); days.append(key.day); bins.append(HeightBin.points(key.halfPoints)); votes.append(Int(count))
        }
        let b = SQLBinds()
        let sql = """
            INSERT INTO day_votes(\(keyColumns), day, height_bin, votes)
            SELECT * FROM unnest(\(keys.unnestArguments(b)), \(b(days))::int[], \(b(bins))::float8[], \(b(votes))::bigint[])
            ON CONFLICT (\(keyColumns), day, height_bin) DO UPDATE SET votes = day_votes.votes + excluded.votes
            """
        return b.query(sql)
    }
}
