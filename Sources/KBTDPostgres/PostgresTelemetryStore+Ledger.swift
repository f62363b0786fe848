import Foundation
import KBTDCore
import KBTDStore
import Logging
import PostgresNIO
import Synchronization

/// The day's budgets (vote ledger, new-key quotas) and the hourly ingest counts.
extension PostgresTelemetryStore {
    /// Adds a commit's per-hour counts (`CommitPlan.hourlyIngest`, oldest first).
    static func writeHourlyIngest(_ hours: [HourlyIngest], connection: PostgresConnection, logger: Logger) async throws {
        guard !hours.isEmpty else { return }
        let rows = hours.map { (hour: $0.hour, batches: $0.batches, samples: $0.samples, rejected: $0.rejected) }
        try await connection.query(PostgresSQL.upsertHourlyIngest(rows), logger: logger)
    }

    /// Persists what a commit spent of the daily budgets (`SourceLedger.spent`, as
    /// `SQLiteTelemetryStore` does), deleting earlier days' rows.
    static func writeLedger(_ ledgers: [SourceLedger], connection: PostgresConnection, logger: Logger) async throws {
        struct RowKey: Hashable, Comparable {
            var day: Int64, source: Int64, series: Int64, bin: Int64
            static func < (a: RowKey, b: RowKey) -> Bool { (a.day, a.source, a.series, a.bin) < (b.day, b.source, b.series, b.bin) }
        }
        guard let today = ledgers.last?.day else { return }
        // One row per key: a statement may not update a row twice.
        var votes: [RowKey: (group: Int64, reserve: Int64, votes: Int64)] = [:]
        for ledger in ledgers {
            for row in ledger.votes {
                let key = RowKey(day: ledger.day, source: Int64(bitPattern: row.source.value), series: Int64(bitPattern: row.key),
                                 bin: Int64(row.halfPoints))
                votes[key, default: (Int64(bitPattern: row.group.value), row.reserve ? 1 : 0, 0)].votes += row.votes
            }
        }
        try await connection.query("DELETE FROM vote_ledger WHERE day < \(today)", logger: logger)
        try await connection.query("DELETE FROM key_quota WHERE day < \(today)", logger: logger)
        if !votes.isEmpty {
            let rows = votes.sorted { $0.key < $1.key }.map {
                (day: $0.key.day, source: $0.key.source, series: $0.key.series, bin: $0.key.bin,
                 group: $0.value.group, reserve: $0.value.reserve, votes: $0.value.votes)
            }
            try await connection.query(PostgresSQL.upsertLedger(rows), logger: logger)
        }
        let quotas = ledgers.flatMap { ledger in
            ledger.newKeys.map { (day: ledger.day, source: Int64(bitPattern: $0.key.value), created: Int64($0.value)) }
        }.sorted { ($0.day, $0.source) < ($1.day, $1.source) }
        if !quotas.isEmpty { try await connection.query(PostgresSQL.upsertQuota(quotas), logger: logger) }
    }

    public func loadLedger(day: Int64) async throws -> SourceLedger {
        let database = self.database
        return try await database.withConnection { connection in
            var ledger = SourceLedger(day: day)
            for try await (source, series, bin, group, reserve, votes) in try await connection.query("""
                SELECT source, series, height_bin, network_group, reserve, votes FROM vote_ledger WHERE day = \(day)
                """, logger: database.logger).decode((Int64, Int64, Int64, Int64, Int64, Int64).self) {
                ledger.votes.append(LedgerIncrement(
                    source: SourceID(UInt64(bitPattern: source)), group: SourceID(UInt64(bitPattern: group)),
                    key: UInt64(bitPattern: series), halfPoints: Int(bin), votes: votes, reserve: reserve != 0))
            }
            for try await (source, created) in try await connection.query(
                "SELECT source, created FROM key_quota WHERE day = \(day)", logger: database.logger).decode((Int64, Int64).self) {
                ledger.newKeys[SourceID(UInt64(bitPattern: source)), default: 0] += Int(created)
            }
            return ledger
        }
    }
}
