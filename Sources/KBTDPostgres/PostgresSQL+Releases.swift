import KBTDCore
import PostgresNIO

extension PostgresSQL {
    /// Docked samples, votes and sources per OS release (`release_counts`, schema v9; `release_sources`, v11).
    static let releases = KeyVariantTables<ReleaseKey>(counts: "release_counts", sources: "release_sources",
                                                       column: "os_minor", type: "int")

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

extension ReleaseKey: KeyVariant {
    var column: Int { minor }
    init?(series: SeriesKey, column: Int) { self.init(series: series, minor: column) }
    static var maxPerKey: Int { HeightIndex.maxReleasesPerKey }
    static var bins: WritableKeyPath<AggregateDelta, [ReleaseBin: ReleaseCount]> { \.releases }
    static var sources: WritableKeyPath<AggregateDelta, [ReleaseKey: Set<SourceID>]> { \.releaseSources }

    static func toDrop(_ held: [VariantStanding<ReleaseKey>]) -> [ReleaseKey] {
        guard let series = held.first?.variant.series else { return [] }
        return HeightIndex.releasesToDrop(held.map { ReleaseStanding(minor: $0.variant.minor, support: $0.support, samples: $0.samples) })
            .map { ReleaseKey(series: series, minor: $0) }
    }
}

extension ReleaseBin: VariantBin {
    var variant: ReleaseKey { ReleaseKey(series: series, minor: minor) }
    init(_ variant: ReleaseKey, halfPoints: Int) { self.init(series: variant.series, minor: variant.minor, halfPoints: halfPoints) }
}
