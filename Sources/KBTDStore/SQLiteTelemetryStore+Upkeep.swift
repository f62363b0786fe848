import CSQLite
#if canImport(Glibc)
import Glibc
#endif
import KBTDCore

/// Pruning, retention, checkpoints and checks outside the commit path.
extension SQLiteTelemetryStore {
    public func pruneUnconfirmedKeys(firstSeenBefore cutoff: Int64, limit: Int) throws -> [SeriesKey] {
        // Never confirmed: no trusted peer and fewer than min_sources networks (a confirmed
        // key that only waits for room in a full index is kept).
        try deleteKeys(selectedBy: """
            SELECT k.model, k.os_major, k.language, k.orientation, k.keyboard_type FROM keys k
            WHERE k.admitted_at IS NULL AND k.first_seen < ?
            AND (SELECT COUNT(*) + COALESCE(MAX(s.source = 0), 0) * 1000 FROM key_sources s
                 WHERE s.model = k.model AND s.os_major = k.os_major AND s.language = k.language
                 AND s.orientation = k.orientation AND s.keyboard_type = k.keyboard_type) < ?
            LIMIT ?
            """, [.int(cutoff), .int(Int64(admission().minSources)), .int(Int64(limit))])
    }

    /// Deletes the keys `select` names, with every count, source and registry row, in one
    /// transaction; the index's bookkeeping forgets them once it commits.
    private func deleteKeys(selectedBy select: String, _ values: [SQLiteValue]) throws -> [SeriesKey] {
        let doomed = try db.inTransaction(.immediate) {
            var doomed: [SeriesKey] = []
            try statement(select).forEachRow(values) { row in
                if let key = Self.series(row) { doomed.append(key) }
            }
            for table in ["height_counts", "animation_counts", "cold_start_counts", "safe_area_counts", "height_votes",
                          "key_sources", "release_counts", "release_sources", "screen_counts", "screen_sources", "day_votes",
                          "day_sources", "keys"] {
                let delete = try statement("DELETE FROM \(table) WHERE \(Self.oneKey)")
                for key in doomed { try delete.run(Self.keyValues(key)) }
            }
            return doomed
        }
        for key in doomed { indexed.remove(key) }
        return doomed
    }

    public func retireSources(seenBefore cutoff: Int64) throws -> Int {
        try db.inTransaction(.immediate) {
            // A release's (or a screen's) network hash retires with its key's (the key's row was not
            // seen since the cutoff, or is gone), and where the key keeps 8 other sources, by its own
            // first `seen_at`. Each release and screen keeps its count of distinct sources.
            for table in ["release_sources", "screen_sources"] {
                try statement("""
                    UPDATE \(table) SET source = \(Self.retiredSourceSQL), seen_at = NULL
                    WHERE source > 0 AND COALESCE(seen_at, 0) < ?1
                    AND NOT EXISTS (SELECT 1 FROM key_sources k WHERE k.model = \(table).model
                        AND k.os_major = \(table).os_major AND k.language = \(table).language
                        AND k.orientation = \(table).orientation AND k.keyboard_type = \(table).keyboard_type
                        AND k.source = \(table).source AND COALESCE(k.seen_at, 0) >= ?1)
                    """).run([.int(cutoff)])
            }
            // A day's network hash goes once its day is older than the cutoff (its count would
            // not survive retirement: a retired identifier is fresh on every row).
            try statement("DELETE FROM day_sources WHERE source > 0 AND day < ?")
                .run([.int(cutoff.dividedRoundingDown(by: 86_400))])
            try statement("""
                UPDATE key_sources SET source = \(Self.retiredSourceSQL), seen_at = NULL
                WHERE source > 0 AND COALESCE(seen_at, 0) < ?
                """).run([.int(cutoff)])
            return db.changes
        }
    }

    public func pruneIdleKeys(lastSeenBefore cutoff: Int64, limit: Int) throws -> [SeriesKey] {
        try deleteKeys(selectedBy: """
            SELECT k.model, k.os_major, k.language, k.orientation, k.keyboard_type FROM keys k
            WHERE k.last_seen < ?
            AND NOT EXISTS (SELECT 1 FROM key_sources s
                 WHERE s.model = k.model AND s.os_major = k.os_major AND s.language = k.language
                 AND s.orientation = k.orientation AND s.keyboard_type = k.keyboard_type AND s.source = 0)
            LIMIT ?
            """, [.int(cutoff), .int(Int64(limit))])
    }

    public func checkpointIfLarge(limit: Int64) -> Int64 {
        var info = stat()
        guard stat(path + "-wal", &info) == 0 else { return 0 }
        guard Int64(info.st_size) > limit else { return Int64(info.st_size) }
        // Never wait for readers here: a reader holding an old snapshot makes
        // the checkpoint busy, and the next commit tries again.
        sqlite3_busy_timeout(db.handle, 0)
        _ = try? db.execute("PRAGMA wal_checkpoint(TRUNCATE);")
        sqlite3_busy_timeout(db.handle, 5000)
        guard stat(path + "-wal", &info) == 0 else { return 0 }
        return Int64(info.st_size)
    }

    public func pruneBatchIDs(receivedBefore cutoff: Int64) throws -> Int {
        try statement("DELETE FROM batches WHERE received_at < ?").run([.int(cutoff)])
        let removed = db.changes
        // Hourly ingest counts share the batch ids' retention (whole hours before the cutoff).
        try statement("DELETE FROM hourly_ingest WHERE hour + 3600 <= ?").run([.int(cutoff)])
        try pruneDayVotes()
        return removed
    }

    /// Deletes the days of votes the index no longer keeps (`HeightIndex.oldestDayKept`), counted
    /// back from the latest day of the keys the index loads (`loadIndexCounts`). Two scans of
    /// the table (2.8 s and 0.8 s for 1,000,000 rows on a loaded machine), so once a UTC day.
    func pruneDayVotes() throws {
        let today = Int64(time(nil)).dividedRoundingDown(by: 86_400)
        guard today != dayVotesPrunedOn else { return }
        var latest: Int64?
        try statement("""
            SELECT MAX(day) FROM day_votes WHERE (\(Self.keyColumns)) IN
                (SELECT \(Self.keyColumns) FROM keys WHERE admitted_at IS NOT NULL) HAVING COUNT(*) > 0
            """).forEachRow { row in latest = row.int(0) }
        if let latest {
            let oldest = SQLiteValue.int(Int64(HeightIndex.oldestDayKept(latest: Int(latest))))
            try statement("DELETE FROM day_votes WHERE day < ?").run([oldest])
            try statement("DELETE FROM day_sources WHERE day < ?").run([oldest])
        }
        dayVotesPrunedOn = today
    }

    public func batchIDCount() throws -> Int {
        var count = 0
        try statement("SELECT COUNT(*) FROM batches").forEachRow { count = Int($0.int(0)) }
        return count
    }

    /// `PRAGMA integrity_check`'s answer (`ok` when sound).
    public func integrityCheck() throws -> String {
        var lines: [String] = []
        try db.prepare("PRAGMA integrity_check").forEachRow { lines.append($0.text(0)) }
        return lines.joined(separator: "\n")
    }
}
