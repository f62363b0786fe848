import CSQLite
#if canImport(Glibc)
import Glibc
#endif
import KBTDCore

/// The day's budgets (vote ledger, new-key quotas) and the hourly ingest counts.
extension SQLiteTelemetryStore {
    static let upsertLedger = """
        INSERT INTO vote_ledger(day, source, series, height_bin, network_group, reserve, votes) VALUES (?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT DO UPDATE SET votes = votes + excluded.votes
        """
    static let upsertQuota = """
        INSERT INTO key_quota(day, source, created) VALUES (?, ?, ?)
        ON CONFLICT DO UPDATE SET created = created + excluded.created
        """

    /// Persists what a commit spent of the daily budgets (`SourceLedger.spent`); the first
    /// commit of a UTC day deletes the earlier days' rows (the budgets start over each day).
    func writeLedger(_ ledgers: [SourceLedger]) throws(SQLiteError) {
        let upsert = try statement(Self.upsertLedger)
        let quota = try statement(Self.upsertQuota)
        for ledger in ledgers {
            let day = ledger.day
            if day > ledgerDay {
                try statement("DELETE FROM vote_ledger WHERE day < ?").run([.int(day)])
                try statement("DELETE FROM key_quota WHERE day < ?").run([.int(day)])
                ledgerDay = day
            }
            for row in ledger.votes {
                try upsert.run([.int(day), .int(Int64(bitPattern: row.source.value)), .int(Int64(bitPattern: row.key)),
                                .int(Int64(row.halfPoints)), .int(Int64(bitPattern: row.group.value)), .int(row.reserve ? 1 : 0),
                                .int(row.votes)])
            }
            for (source, created) in ledger.newKeys {
                try quota.run([.int(day), .int(Int64(bitPattern: source.value)), .int(Int64(created))])
            }
        }
    }

    public func loadLedger(day: Int64) throws -> SourceLedger {
        var ledger = SourceLedger(day: day)
        guard try hasTable("vote_ledger") else { return ledger }
        try statement("""
            SELECT source, series, height_bin, network_group, reserve, votes FROM vote_ledger WHERE day = ?
            """).forEachRow([.int(day)]) { row in
            ledger.votes.append(LedgerIncrement(
                source: SourceID(UInt64(bitPattern: row.int(0))), group: SourceID(UInt64(bitPattern: row.int(3))),
                key: UInt64(bitPattern: row.int(1)), halfPoints: Int(row.int(2)), votes: row.int(5), reserve: row.int(4) != 0))
        }
        try statement("SELECT source, created FROM key_quota WHERE day = ?").forEachRow([.int(day)]) { row in
            ledger.newKeys[SourceID(UInt64(bitPattern: row.int(0))), default: 0] += Int(row.int(1))
        }
        return ledger
    }

    /// Adds a commit's per-hour counts (`CommitPlan.hourlyIngest`).
    func writeHourlyIngest(_ hours: [HourlyIngest]) throws(SQLiteError) {
        let upsert = try statement(Self.upsertHourlyIngest)
        for hour in hours {
            try upsert.run([.int(hour.hour), .int(hour.batches), .int(hour.samples), .int(hour.rejected)])
        }
    }

    /// Batches and samples stored per hour from `since` (Unix seconds) on, oldest first;
    /// empty for a database from before the table existed (opened read-only, not migrated).
    public func hourlyIngest(since: Int64) throws -> [HourlyIngest] {
        var exists = false
        try statement("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'hourly_ingest'").forEachRow { _ in exists = true }
        guard exists else { return [] }
        var hours: [HourlyIngest] = []
        try statement("SELECT hour, batches, samples, rejected FROM hourly_ingest WHERE hour >= ? ORDER BY hour")
            .forEachRow([.int(since)]) { row in
                hours.append(HourlyIngest(hour: row.int(0), batches: row.int(1), samples: row.int(2), rejected: row.int(3)))
            }
        return hours
    }
}
