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
}
