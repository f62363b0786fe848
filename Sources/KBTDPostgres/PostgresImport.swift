import Foundation
import KBTDCore
import KBTDStore
import PostgresNIO

/// `kbtd migrate`: moves an SQLite installation into PostgreSQL in one
/// transaction. Counts merge by addition, seen batch ids come along (a phone's
/// retry after the move is still a duplicate), key registry rows merge (earliest
/// first-seen and admission). A second import of the same database is refused.
public struct StoreImport: Sendable {
    /// Names the imported database: its path and creation time.
    public var source: String
    public var counts: AggregateDelta
    public var keys: [StoredKey]
    public var batchIDs: [StoredBatchID]
    public var hourly: [HourlyIngest]

    public init(source: String, counts: AggregateDelta, keys: [StoredKey], batchIDs: [StoredBatchID], hourly: [HourlyIngest]) {
        self.source = source
        self.counts = counts
        self.keys = keys
        self.batchIDs = batchIDs
        self.hourly = hourly
    }

    /// The same database was imported before.
    public struct AlreadyImported: KBTDDecision, CustomStringConvertible {
        public var source: String
        public var importedAt: Int64
        public var description: String {
            "\(source) was already imported into this PostgreSQL database (at Unix time \(importedAt)); importing it again would count it twice"
        }
    }

    /// Rows written per statement.
    static let chunk = 5_000

    /// Imports into `database` (migrating it first); returns the batch ids that were new there.
    public func run(into database: PostgresDatabase) async throws -> Int {
        try await PostgresSchema.migrate(database)
        let input = self
        return try await database.withTransaction { connection in
            let logger = database.logger
            let b = SQLBinds()
            for try await importedAt in try await connection.query(b.query(
                "SELECT imported_at FROM imports WHERE source = \(b(input.source)) FOR UPDATE"), logger: logger).decode(Int.self) {
                throw AlreadyImported(source: input.source, importedAt: Int64(importedAt))
            }
            // -1 stands for "never admitted" in the keys' array below (NULLIF turns it back into NULL;
            // LEAST ignores NULLs, so a key admitted on either side stays admitted).
            // Counts, key by key in the writers' order, a chunk per statement.
            // Client networks' keyed hashes start their retention (source_retention_days) now.
            let now = Int64(Date().timeIntervalSince1970)
            var remaining = input.counts
            remaining.screens = [:]
            let keys = remaining.seriesKeys.sorted(by: SeriesKey.writeOrder)
            var start = 0
            while start < keys.count {
                let slice = Set(keys[start..<min(start + 2_000, keys.count)])
                try await PostgresTelemetryStore.write(remaining.filter { slice.contains($0) }, seenAt: now, connection: connection, logger: logger)
                start += 2_000
            }
            if !input.counts.screens.isEmpty {
                var screens = AggregateDelta()
                screens.screens = input.counts.screens
                try await PostgresTelemetryStore.write(screens, seenAt: now, connection: connection, logger: logger)
            }
            let sortedKeys = input.keys.sorted { SeriesKey.writeOrder($0.key, $1.key) }
            for chunkStart in stride(from: 0, to: sortedKeys.count, by: Self.chunk) {
                let rows = sortedKeys[chunkStart..<min(chunkStart + Self.chunk, sortedKeys.count)]
                var arrays = KeyArrays()
                rows.forEach { arrays.append($0.key) }
                let k = SQLBinds()
                try await connection.query(k.query("""
                    INSERT INTO keys(\(PostgresSQL.keyColumns), first_seen, admitted_at, last_seen)
                    SELECT u.model, u.os_major, u.language, u.orientation, u.keyboard_type, u.first_seen, NULLIF(u.admitted_at, -1),
                           extract(epoch FROM now())::bigint
                    FROM unnest(\(arrays.unnestArguments(k)), \(k(rows.map { Int($0.firstSeen) }))::bigint[],
                                \(k(rows.map { $0.admittedAt.map { Int($0) } ?? -1 }))::bigint[])
                        AS u(model, os_major, language, orientation, keyboard_type, first_seen, admitted_at)
                    ON CONFLICT (\(PostgresSQL.keyColumns)) DO UPDATE SET
                        first_seen = LEAST(keys.first_seen, excluded.first_seen),
                        admitted_at = LEAST(keys.admitted_at, excluded.admitted_at)
                    """), logger: logger)
            }
            let hours = input.hourly.map { (hour: $0.hour, batches: $0.batches, samples: $0.samples, rejected: $0.rejected) }
            if !hours.isEmpty { try await connection.query(PostgresSQL.upsertHourlyIngest(hours), logger: logger) }
            var claimed = 0
            for chunkStart in stride(from: 0, to: input.batchIDs.count, by: Self.chunk) {
                let rows = input.batchIDs[chunkStart..<min(chunkStart + Self.chunk, input.batchIDs.count)].map {
                    PendingBatch(batchID: $0.batchID, receivedAt: $0.receivedAt, model: $0.model, os: $0.os, accepted: $0.accepted,
                                 rejected: $0.rejected, delta: AggregateDelta())
                }
                for try await _ in try await connection.query(PostgresSQL.claimBatchIDs(rows), logger: logger).decode(String.self) {
                    claimed += 1
                }
            }
            let samples = input.counts.animations.values.reduce(0, +)
            let r = SQLBinds()
            try await connection.query(r.query("""
                INSERT INTO imports(source, imported_at, batches, samples)
                VALUES (\(r(input.source)), \(r(Int(Date().timeIntervalSince1970))), \(r(input.batchIDs.count)), \(r(Int(samples))))
                """), logger: logger)
            return claimed
        }
    }
}
