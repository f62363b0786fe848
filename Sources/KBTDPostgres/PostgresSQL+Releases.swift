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
