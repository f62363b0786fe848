import KBTDCore
import PostgresNIO

/// One variant of an exact key kept as the OS releases are (schema v9 and v11) and the reported
/// screens (v13): docked samples and votes per (key, variant, bin), up to 8 sources per (key,
/// variant), at most `maxPerKey` variants a key. `column` is the variant's own column's value
/// (`os_minor`, `screen`).
protocol KeyVariant: Hashable, Sendable, Comparable {
    associatedtype Column: PostgresArrayEncodable & PostgresNonThrowingEncodable & PostgresDecodable & Sendable
    associatedtype Bin: VariantBin where Bin.Variant == Self
    var series: SeriesKey { get }
    var column: Column { get }
    /// Nil where the stored value is not one this kbtd reads.
    init?(series: SeriesKey, column: Column)
    /// The bound the index keeps per key (`HeightIndex.maxReleasesPerKey`, `maxScreensPerKey`).
    static var maxPerKey: Int { get }
    /// The variants of one key to drop, by the index's own rule (`HeightIndex.releasesToDrop`, `screensToDrop`).
    static func toDrop(_ held: [VariantStanding<Self>]) -> [Self]
    /// Where a delta holds this kind's docked samples and votes per bin (`releases`, `screenCounts`).
    static var bins: WritableKeyPath<AggregateDelta, [Bin: ReleaseCount]> { get }
    /// Where a delta holds this kind's sources (`releaseSources`, `screenSources`).
    static var sources: WritableKeyPath<AggregateDelta, [Self: Set<SourceID>]> { get }
}

/// One height bin of one key's variant (`ReleaseBin`, `ScreenBin`).
protocol VariantBin: Hashable {
    associatedtype Variant: KeyVariant
    var variant: Variant { get }
    var halfPoints: Int { get }
    init(_ variant: Variant, halfPoints: Int)
}

/// One variant of a key against its others: its support and its docked samples.
struct VariantStanding<Key: KeyVariant> {
    var variant: Key
    var support: ReleaseSupport
    var samples: Int64
}

/// The two tables of one kind of variant (`release_counts` and `release_sources`, `screen_counts`
/// and `screen_sources`) and the column naming the variant: one set of statements for every kind.
struct KeyVariantTables<Key: KeyVariant>: Sendable {
    /// The tables' names.
    var counts: String
    var sources: String
    /// The variant's column and its PostgreSQL type (`os_minor`, `int`).
    var column: String
    var type: String

    /// Adds docked samples and votes per (key, variant, bin) to `counts`.
    func upsertCounts(_ rows: [(variant: Key, halfPoints: Int, count: ReleaseCount)]) -> PostgresQuery {
        var keys = KeyArrays(), variants: [Key.Column] = [], bins: [Double] = [], samples: [Int] = [], votes: [Int] = []
        for (variant, halfPoints, count) in rows {
            keys.append(variant.series); variants.append(variant.column); bins.append(HeightBin.points(halfPoints))
            samples.append(Int(count.samples)); votes.append(Int(count.votes))
        }
        let b = SQLBinds()
        let sql = """
            INSERT INTO \(counts)(\(PostgresSQL.keyColumns), \(column), height_bin, samples, votes)
            SELECT * FROM unnest(\(keys.unnestArguments(b)), \(b(variants))::\(type)[], \(b(bins))::float8[], \(b(samples))::bigint[],
                                 \(b(votes))::bigint[])
            ON CONFLICT (\(PostgresSQL.keyColumns), \(column), height_bin) DO UPDATE
            SET samples = \(counts).samples + excluded.samples, votes = \(counts).votes + excluded.votes
            """
        return b.query(sql)
    }

    /// Remembers which sources reported each (key, variant): up to 8 per (key, variant), as
    /// `insertKeySources` per key; a row already there is not touched (its `seen_at` is the first
    /// report; it retires with its key's row). Returns the rows it added (what the index counts,
    /// `ReleaseSupport`): key columns, the variant's column, source.
    func insertSources(_ rows: [(variant: Key, source: SourceID)], seenAt: Int64) -> PostgresQuery {
        var keys = KeyArrays(), variants: [Key.Column] = [], ids: [Int] = [], seen: [Int] = []
        for (variant, source) in rows {
            keys.append(variant.series); variants.append(variant.column); ids.append(Int(Int64(bitPattern: source.value)))
            seen.append(source.isNetworkHash ? Int(seenAt) : -1)
        }
        let b = SQLBinds()
        let sql = """
            INSERT INTO \(sources)(\(PostgresSQL.keyColumns), \(column), source, seen_at)
            SELECT u.model, u.os_major, u.language, u.orientation, u.keyboard_type, u.variant, u.source, NULLIF(u.seen_at, -1)
            FROM unnest(\(keys.unnestArguments(b)), \(b(variants))::\(type)[], \(b(ids))::bigint[], \(b(seen))::bigint[])
                AS u(model, os_major, language, orientation, keyboard_type, variant, source, seen_at)
            WHERE (SELECT COUNT(*) FROM \(sources) s WHERE s.model = u.model AND s.os_major = u.os_major
                   AND s.language = u.language AND s.orientation = u.orientation AND s.keyboard_type = u.keyboard_type
                   AND s.\(column) = u.variant AND s.source <> u.source) < 8
            ON CONFLICT (\(PostgresSQL.keyColumns), \(column), source) DO NOTHING
            RETURNING \(PostgresSQL.keyColumns), \(column), source
            """
        return b.query(sql)
    }

    /// Each variant of the keys holding more than `Key.maxPerKey`, with its docked samples, distinct
    /// sources and whether one is a trusted peer (as the SQLite store's `releaseStandings`): key
    /// columns, the variant's column, samples, sources, trusted. Other keys give no rows.
    func standings(_ keys: [SeriesKey]) -> PostgresQuery {
        var arrays = KeyArrays()
        keys.forEach { arrays.append($0) }
        let b = SQLBinds()
        let columns = PostgresSQL.keyColumns
        let sql = """
            WITH k AS (SELECT * FROM unnest(\(arrays.unnestArguments(b)))
                       AS k(model, os_major, language, orientation, keyboard_type)),
            r AS (SELECT \(columns), \(column), SUM(samples)::bigint AS samples, 0::bigint AS sources, false AS trusted
                  FROM \(counts) JOIN k USING (\(columns)) GROUP BY \(columns), \(column)
                  UNION ALL
                  SELECT \(columns), \(column), 0::bigint, COUNT(*)::bigint, bool_or(source = 0)
                  FROM \(sources) JOIN k USING (\(columns)) GROUP BY \(columns), \(column)),
            crowded AS (SELECT \(columns) FROM r GROUP BY \(columns)
                        HAVING COUNT(DISTINCT \(column)) > \(b(Key.maxPerKey))::int)
            SELECT \(columns), \(column), SUM(samples)::bigint, MAX(sources)::bigint, bool_or(trusted)
            FROM r JOIN crowded USING (\(columns)) GROUP BY \(columns), \(column)
            """
        return b.query(sql)
    }

    /// Drops the rows of some (key, variant)s from `table` (`counts` or `sources`).
    func drop(_ variants: [Key], from table: String) -> PostgresQuery {
        var keys = KeyArrays(), values: [Key.Column] = []
        for variant in variants {
            keys.append(variant.series)
            values.append(variant.column)
        }
        let b = SQLBinds()
        let sql = """
            DELETE FROM \(table) WHERE (\(PostgresSQL.keyColumns), \(column))
                IN (SELECT * FROM unnest(\(keys.unnestArguments(b)), \(b(values))::\(type)[]))
            """
        return b.query(sql)
    }
}
