import Foundation
import KBTDCore
import KBTDStore
import Logging
import PostgresNIO
import Synchronization

/// Pruning, retention and counts outside the commit path.
extension PostgresTelemetryStore {
    public func pruneUnconfirmedKeys(firstSeenBefore cutoff: Int64, limit: Int) async throws -> [SeriesKey] {
        let minSources = admission().minSources
        let database = self.database
        return try await database.withTransaction { connection in
            let b = SQLBinds()
            let sql = """
                SELECT k.model, k.os_major, k.language, k.orientation, k.keyboard_type FROM keys k
                WHERE k.admitted_at IS NULL AND k.first_seen < \(b(Int(cutoff)))
                AND (SELECT COUNT(*) + COALESCE(MAX(CASE WHEN s.source = 0 THEN 1 ELSE 0 END), 0) * 1000 FROM key_sources s
                     WHERE s.model = k.model AND s.os_major = k.os_major AND s.language = k.language
                     AND s.orientation = k.orientation AND s.keyboard_type = k.keyboard_type) < \(b(minSources))
                ORDER BY k.model, k.os_major, k.language, k.orientation, k.keyboard_type
                LIMIT \(b(limit))
                FOR UPDATE OF k SKIP LOCKED
                """
            return try await Self.deleteKeys(selectedBy: b.query(sql), connection: connection, logger: database.logger)
        }
    }

    /// Deletes the keys `select` names (inside the caller's transaction), with every count,
    /// source and registry row; returns them.
    static func deleteKeys(selectedBy select: PostgresQuery, connection: PostgresConnection, logger: Logger) async throws -> [SeriesKey] {
        var doomed: [SeriesKey] = []
        for try await row in try await connection.query(select, logger: logger) {
            if let key = try series(row) { doomed.append(key) }
        }
        guard !doomed.isEmpty else { return doomed }
        var arrays = KeyArrays()
        doomed.forEach { arrays.append($0) }
        for table in ["height_counts", "animation_counts", "cold_start_counts", "safe_area_counts", "height_votes",
                      "key_sources", "release_counts", "release_sources", "screen_counts", "screen_sources", "day_votes",
                      "day_sources", "keys"] {
            let d = SQLBinds()
            try await connection.query(d.query("""
                DELETE FROM \(table) WHERE (\(PostgresSQL.keyColumns)) IN (SELECT * FROM unnest(\(arrays.unnestArguments(d))))
                """), logger: logger)
        }
        return doomed
    }

    /// In slices of 5,000 rows, skipping rows a commit holds (never waiting on one, so never
    /// deadlocking with a node's commit): a skipped row retires at the next pass.
    /// A release's or screen's network hash (`release_sources`, `screen_sources`) retires with its
    /// key's, and where the key keeps 8 other sources by its own first `seen_at`, as the SQLite
    /// store does; the count returned is the keys'.
    public func retireSources(seenBefore cutoff: Int64) async throws -> Int {
        let keyHeld = """
            AND NOT EXISTS (SELECT 1 FROM key_sources s WHERE s.model = r.model AND s.os_major = r.os_major
                AND s.language = r.language AND s.orientation = r.orientation AND s.keyboard_type = r.keyboard_type
                AND s.source = r.source AND COALESCE(s.seen_at, 0) >= r.cutoff)
            """
        for (table, column) in [("release_sources", "os_minor"), ("screen_sources", "screen")] {
            _ = try await retireSources(in: table, keyColumns: PostgresSQL.keyColumns + ", " + column, seenBefore: cutoff, condition: keyHeld)
        }
        // A day's network hash goes once its day is older than the cutoff (a retired identifier
        // is fresh on every row, so it would count one network once per day).
        let database = self.database
        try await database.withConnection { connection in
            let b = SQLBinds()
            try await connection.query(b.query("""
                DELETE FROM day_sources WHERE source > 0 AND day < \(b(Int(cutoff.dividedRoundingDown(by: 86_400))))
                """), logger: database.logger)
        }
        return try await retireSources(in: "key_sources", keyColumns: PostgresSQL.keyColumns, seenBefore: cutoff)
    }

    /// `condition`: more of the WHERE clause, on the table as `r` (`r.cutoff` stands for the cutoff).
    private func retireSources(in table: String, keyColumns: String, seenBefore cutoff: Int64,
                               condition: String = "") async throws -> Int {
        let database = self.database
        let match = keyColumns.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            .map { "k.\($0) = d.\($0)" }.joined(separator: " AND ")
        var total = 0
        while true {
            let retired = try await database.withConnection { connection in
                let b = SQLBinds()
                let cutoffBind = b(Int(cutoff)) + "::bigint"
                var count = 0
                for try await value in try await connection.query(b.query("""
                    WITH doomed AS (
                        SELECT \(keyColumns), source FROM \(table) r
                        WHERE source > 0 AND COALESCE(seen_at, 0) < \(cutoffBind) \(condition.replacingOccurrences(of: "r.cutoff", with: cutoffBind))
                        LIMIT 5000 FOR UPDATE OF r SKIP LOCKED),
                    retired AS (
                        UPDATE \(table) k SET source = \(PostgresSQL.retiredSource), seen_at = NULL FROM doomed d
                        WHERE \(match) AND k.source = d.source
                        RETURNING 1)
                    SELECT COUNT(*)::bigint FROM retired
                    """), logger: database.logger).decode(Int.self) {
                    count = value
                }
                return count
            }
            total += retired
            if retired < 5000 { return total }
        }
    }

    /// Deletes keys without trusted data idle since `cutoff`, as the SQLite
    /// store does. This node's index drops them (the writer's `onForget`);
    /// other nodes' indexes keep serving them until those nodes restart.
    public func pruneIdleKeys(lastSeenBefore cutoff: Int64, limit: Int) async throws -> [SeriesKey] {
        let database = self.database
        let doomed: [SeriesKey] = try await database.withTransaction { connection in
            let b = SQLBinds()
            let sql = """
                SELECT k.model, k.os_major, k.language, k.orientation, k.keyboard_type FROM keys k
                WHERE k.last_seen < \(b(Int(cutoff)))
                AND NOT EXISTS (SELECT 1 FROM key_sources s
                     WHERE s.model = k.model AND s.os_major = k.os_major AND s.language = k.language
                     AND s.orientation = k.orientation AND s.keyboard_type = k.keyboard_type AND s.source = 0)
                ORDER BY k.model, k.os_major, k.language, k.orientation, k.keyboard_type
                LIMIT \(b(limit))
                FOR UPDATE OF k SKIP LOCKED
                """
            return try await Self.deleteKeys(selectedBy: b.query(sql), connection: connection, logger: database.logger)
        }
        for key in doomed { indexed.remove(key) }
        return doomed
    }

    /// Forgets batch ids (and hourly counts) past retention, and `commit_log`
    /// rows older than an hour (every node has read them by then; a node that
    /// was away longer reloads its index from the tables when it starts).
    public func pruneBatchIDs(receivedBefore cutoff: Int64) async throws -> Int {
        let database = self.database
        let now = Int(Date().timeIntervalSince1970)
        // `day_votes` is pruned once a UTC day (two scans of the table).
        let today = Int64(now).dividedRoundingDown(by: 86_400)
        let pruneDays = today != dayVotesPrunedOn
        let removed = try await database.withConnection { connection in
            var removed = 0
            let b = SQLBinds()
            for try await count in try await connection.query(b.query("""
                WITH gone AS (DELETE FROM batches WHERE received_at < \(b(Int(cutoff))) RETURNING 1) SELECT COUNT(*)::bigint FROM gone
                """), logger: database.logger).decode(Int.self) {
                removed = count
            }
            let h = SQLBinds()
            try await connection.query(h.query("DELETE FROM hourly_ingest WHERE hour + 3600 <= \(h(Int(cutoff)))"),
                                       logger: database.logger)
            let c = SQLBinds()
            try await connection.query(c.query("DELETE FROM commit_log WHERE created_at < \(c(now - 3600))"), logger: database.logger)
            // The days of votes the index no longer keeps (`HeightIndex.oldestDayKept`), counted back
            // from the latest day of the keys the index loads, as the SQLite store does.
            guard pruneDays else { return removed }
            var latest: Int?
            for try await day in try await connection.query("""
                SELECT MAX(day)::bigint FROM day_votes WHERE \(unescaped: Self.admittedFilter.sql ?? "TRUE")
                """, logger: database.logger).decode(Int?.self) {
                latest = day
            }
            if let latest {
                let d = SQLBinds()
                try await connection.query(d.query("DELETE FROM day_votes WHERE day < \(d(HeightIndex.oldestDayKept(latest: latest)))"),
                                           logger: database.logger)
                let s = SQLBinds()
                try await connection.query(s.query("DELETE FROM day_sources WHERE day < \(s(HeightIndex.oldestDayKept(latest: latest)))"),
                                           logger: database.logger)
            }
            return removed
        }
        dayVotesPrunedOn = today
        return removed
    }

    public func batchIDCount() async throws -> Int {
        let database = self.database
        return try await database.withConnection { connection in
            var count = 0
            for try await value in try await connection.query("SELECT COUNT(*)::bigint FROM batches", logger: database.logger)
                .decode(Int.self) {
                count = value
            }
            return count
        }
    }

    static func series(_ row: PostgresRow) throws -> SeriesKey? {
        var cells = row.makeIterator()
        let model = try cells.next()!.decode(String.self)
        let osMajor = try cells.next()!.decode(Int.self)
        let language = try cells.next()!.decode(String.self)
        guard let orientation = Orientation(rawValue: try cells.next()!.decode(String.self)) else { return nil }
        let keyboardType = try cells.next()!.decode(String.self)
        return SeriesKey(model: model, osMajor: osMajor, language: language, orientation: orientation, keyboardType: keyboardType)
    }
}
