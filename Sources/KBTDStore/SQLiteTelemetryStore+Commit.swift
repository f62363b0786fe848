import CSQLite
#if canImport(Glibc)
import Glibc
#endif
import KBTDCore

/// One group commit: batch ids, counts, votes, sources, key admission.
extension SQLiteTelemetryStore {
    // MARK: SQL, named by what it does

    static let insertBatchID = """
        INSERT OR IGNORE INTO batches(batch_id, received_at, model, os, accepted, rejected) VALUES (?, ?, ?, ?, ?, ?)
        """
    static let heightCounts = MultiRowUpsert(
        slot: 0, "INSERT INTO height_counts(model, os_major, language, orientation, keyboard_type, placement, height_bin, count)",
        width: 8, conflict: "ON CONFLICT DO UPDATE SET count = count + excluded.count")
    static let animationCounts = MultiRowUpsert(
        slot: 1, "INSERT INTO animation_counts(model, os_major, language, orientation, keyboard_type, event, duration_ms, curve, count)",
        width: 9, conflict: "ON CONFLICT DO UPDATE SET count = count + excluded.count")
    static let coldStartCounts = MultiRowUpsert(
        slot: 2, "INSERT INTO cold_start_counts(model, os_major, language, orientation, keyboard_type, preloaded, bucket, bucket_ms, count)",
        width: 9, conflict: "ON CONFLICT DO UPDATE SET count = count + excluded.count")
    static let safeAreaCounts = MultiRowUpsert(
        slot: 3, "INSERT INTO safe_area_counts(model, os_major, language, orientation, keyboard_type, safe_area_bin, count)",
        width: 7, conflict: "ON CONFLICT DO UPDATE SET count = count + excluded.count")
    static let heightVotes = MultiRowUpsert(
        slot: 4, "INSERT INTO height_votes(model, os_major, language, orientation, keyboard_type, height_bin, votes)",
        width: 7, conflict: "ON CONFLICT DO UPDATE SET votes = votes + excluded.votes")

    /// Remembers up to 8 sources per key: enough to tell one source from several.
    /// A network already remembered only has its last-seen time moved on (`touchKeySource`, run
    /// first; a network's keyed hash is kept `source_retention_days` after that time), so a change
    /// here is a new source of the key (the index's support counts them).
    static let insertKeySource = """
        INSERT INTO key_sources(model, os_major, language, orientation, keyboard_type, source, seen_at)
        SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7
        WHERE (SELECT COUNT(*) FROM key_sources WHERE model = ?1 AND os_major = ?2 AND language = ?3
               AND orientation = ?4 AND keyboard_type = ?5 AND source <> ?6) < 8
        ON CONFLICT DO NOTHING
        """
    static let touchKeySource = """
        UPDATE key_sources SET seen_at = MAX(COALESCE(seen_at, ?7), ?7)
        WHERE model = ?1 AND os_major = ?2 AND language = ?3 AND orientation = ?4 AND keyboard_type = ?5 AND source = ?6
        """

    /// A random retired identifier (`SourceID`): negative, odd, never derived from an address.
    static let retiredSourceSQL = "-((random() & 9223372036854775807) | 1)"

    /// Batches per model and reported screen (`device.screen`).
    static let modelScreens = MultiRowUpsert(
        slot: 5, "INSERT INTO model_screens(model, screen, count)", width: 3,
        conflict: "ON CONFLICT DO UPDATE SET count = count + excluded.count")

    /// Samples ingested per hour: the dashboard's "samples over time".
    static let upsertHourlyIngest = """
        INSERT INTO hourly_ingest(hour, batches, samples, rejected) VALUES (?, ?, ?, ?)
        ON CONFLICT DO UPDATE SET batches = batches + excluded.batches, samples = samples + excluded.samples,
            rejected = rejected + excluded.rejected
        """

    static func keyValues(_ key: SeriesKey) -> [SQLiteValue] {
        [.text(key.model), .int(Int64(key.osMajor)), .text(key.language), .text(key.orientation.rawValue), .text(key.keyboardType)]
    }

    // MARK: TelemetryStore

    /// Registers a key, or moves its `last_seen` to this commit's day (at most one write a key a day).
    static let registerKey = """
        INSERT INTO keys(model, os_major, language, orientation, keyboard_type, first_seen, admitted_at, last_seen)
        VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL, ?6)
        ON CONFLICT DO UPDATE SET last_seen = excluded.last_seen WHERE keys.last_seen / 86400 < excluded.last_seen / 86400
        """
    static let touchKey = """
        UPDATE keys SET last_seen = ?6 WHERE model = ?1 AND os_major = ?2 AND language = ?3 AND orientation = ?4 AND keyboard_type = ?5
        """
    static let evictKey = """
        UPDATE keys SET admitted_at = NULL
        WHERE model = ? AND os_major = ? AND language = ? AND orientation = ? AND keyboard_type = ?
        """
    /// Every admitted key with its support: last seen, distinct sources, trusted.
    static let indexedSupport = """
        SELECT k.model, k.os_major, k.language, k.orientation, k.keyboard_type, k.last_seen,
               COUNT(s.source), COALESCE(MAX(s.source = 0), 0)
        FROM keys k LEFT JOIN key_sources s ON s.model = k.model AND s.os_major = k.os_major AND s.language = k.language
            AND s.orientation = k.orientation AND s.keyboard_type = k.keyboard_type
        WHERE k.admitted_at IS NOT NULL
        GROUP BY k.model, k.os_major, k.language, k.orientation, k.keyboard_type
        """
    static let countKeySources = """
        SELECT COUNT(*), COALESCE(MAX(source = 0), 0) FROM key_sources
        WHERE model = ? AND os_major = ? AND language = ? AND orientation = ? AND keyboard_type = ?
        """
    static let admitKey = """
        UPDATE keys SET admitted_at = ?
        WHERE model = ? AND os_major = ? AND language = ? AND orientation = ? AND keyboard_type = ?
        """
    static let keyColumns = "model, os_major, language, orientation, keyboard_type"
    static let oneKey = "model = ? AND os_major = ? AND language = ? AND orientation = ? AND keyboard_type = ?"

    public func commit(_ batches: [PendingBatch]) throws -> CommitResult {
        try db.inTransaction(.immediate) {
            var plan = CommitPlan(batches)
            let insertBatch = try statement(Self.insertBatchID)
            var taken: [Bool] = []
            taken.reserveCapacity(plan.claims.count)
            for batch in plan.claims {
                try insertBatch.finish(batch.batchID.withCString { id in
                    batch.model.withCString { model in
                        batch.os.withCString { os in
                            insertBatch.step {
                                $0.text(id); $0.int(batch.receivedAt); $0.text(model); $0.text(os)
                                $0.int(Int64(batch.accepted)); $0.int(Int64(batch.rejected))
                            }
                        }
                    }
                })
                taken.append(db.changes == 1)
            }
            plan.settle(taken: taken)
            return try apply(plan)
        }
    }

    /// Writes a settled commit's decisions inside the commit's transaction: the counts,
    /// the keys' admission, the hours' ingest counts and the day's budgets.
    func apply(_ plan: CommitPlan) throws -> CommitResult {
        let written = try write(plan.added, seenAt: plan.now)
        let outcome = try admit(plan, newSources: written.keys, newReleaseSources: written.releases,
                                newScreenSources: written.screens)
        try writeHourlyIngest(plan.hourlyIngest)
        try writeLedger(plan.ledgers)
        var result = CommitResult(stored: plan.stored, added: outcome.added, admitted: outcome.admitted)
        result.evicted = outcome.evicted
        return result
    }

    /// Registers the commit's keys and writes what the index decides (`IndexedKeys.review`, then
    /// `admit`): keys already admitted pass their new counts, and their `last_seen` moves on a new
    /// UTC day; a key not admitted is registered, and enters once confirmed, while the index has
    /// room or else in place of the weakest indexed key it has more support than (the displaced
    /// key is marked not admitted, keeps its counts on disk, and is returned to leave the index);
    /// an admitted key passes everything stored for it; the rest stay on disk.
    func admit(_ plan: CommitPlan, newSources: [SeriesKey: (count: Int, trusted: Bool)],
               newReleaseSources: [ReleaseKey: Set<SourceID>], newScreenSources: [ScreenVariantKey: Set<SourceID>]) throws
        -> (added: AggregateDelta, admitted: Int, evicted: [SeriesKey]) {
        let now = plan.now
        let review = indexed.review(plan.addedKeys, newSources: newSources, trusted: plan.trustedKeys, now: now)
        for key in review.touched { try statement(Self.touchKey).run(key: key) { $0.int(now) } }
        let register = try statement(Self.registerKey)
        var stored: [SeriesKey: (sources: Int, trusted: Bool)] = [:]
        for key in review.unindexed {
            try register.run(key: key) { $0.int(now) }
            try statement(Self.countKeySources).forEachRow(Self.keyValues(key)) { row in
                stored[key] = (Int(row.int(0)), row.int(1) != 0)
            }
        }
        let placement = indexed.admit(review, stored: stored, rules: admission())
        for key in placement.evicted { try statement(Self.evictKey).run(Self.keyValues(key)) }
        for (key, _) in placement.admitted { try statement(Self.admitKey).run([.int(now)] + Self.keyValues(key)) }
        // A failed commit leaves `indexed` ahead of the database: the writer then drops this
        // store and opens a new one, which reads it again.
        indexed.apply(review)
        indexed.apply(placement)
        let pass = review.passing.count == plan.addedKeys.count ? plan.addedKeys : Set(review.passing)
        var delta = plan.indexDelta(passing: pass, newReleaseSources: newReleaseSources, newScreenSources: newScreenSources)
        for (key, _) in placement.admitted {
            delta.merge(try readCounts(where: Self.oneKey, Self.keyValues(key)))
        }
        return (delta, placement.admitted.count, placement.evicted)
    }

    /// What a commit's `write` took in: per key, the new distinct sources of `key_sources` (and
    /// whether one is a trusted peer); per (key, release) and (key, screen), the sources
    /// `release_sources` and `screen_sources` added.
    struct WrittenSources {
        var keys: [SeriesKey: (count: Int, trusted: Bool)] = [:]
        var releases: [ReleaseKey: Set<SourceID>] = [:]
        var screens: [ScreenVariantKey: Set<SourceID>] = [:]
    }

    /// Upserts every count of `delta`; `seenAt` (Unix seconds) is when its client networks reported
    /// their keys. Returns the sources stored for the first time (`WrittenSources`).
    @discardableResult
    func write(_ delta: AggregateDelta, seenAt: Int64) throws(SQLiteError) -> WrittenSources {
        // A table's rows keep their keys' texts for the next table's (`SQLiteRows.key`); none outlive the commit.
        defer { rows.removeAll() }
        try upsert(Self.heightCounts, delta.heights) { key, count, row in
            row.key(key.series); row.text(key.placement.rawValue); row.double(HeightBin.points(key.halfPoints)); row.int(count)
        }
        try upsert(Self.animationCounts, delta.animations) { key, count, row in
            row.key(key.series); row.text(key.event.rawValue); row.int(Int64(key.bin.durationMs)); row.int(Int64(key.bin.curve))
            row.int(count)
        }
        try upsert(Self.coldStartCounts, delta.coldStarts) { key, count, row in
            row.key(key.series); row.int(key.preloaded ? 1 : 0); row.int(Int64(key.bucket)); row.double(LogBucket.value(key.bucket))
            row.int(count)
        }
        try upsert(Self.safeAreaCounts, delta.safeAreas) { key, count, row in
            row.key(key.series); row.double(HeightBin.points(key.halfPoints)); row.int(count)
        }
        try upsert(Self.heightVotes, delta.votes) { key, count, row in
            row.key(key.series); row.double(HeightBin.points(key.halfPoints)); row.int(count)
        }
        let sources = try statement(Self.insertKeySource)
        let touch = try statement(Self.touchKeySource)
        var newSources: [SeriesKey: (count: Int, trusted: Bool)] = [:]
        for (series, ids) in delta.sources {
            let fingerprint = ids.contains(.trusted) ? series.fingerprint : 0
            for id in ids {
                if id == .trusted {
                    // A row a commit already wrote: writing it again changes nothing (`knowsTrustedRow`).
                    if indexed.knowsTrustedRow(fingerprint) { continue }
                    indexed.noteTrustedRow(fingerprint)
                }
                let source = Int64(bitPattern: id.value)
                // Only a network's keyed hash has a last-seen time: trusted and retired rows never expire.
                // A network that reported the key before (the usual case) is one statement: its
                // last-seen time moves on; else it is inserted, if the key keeps fewer than 8.
                if id.isNetworkHash {
                    try touch.run(key: series) { $0.int(source); $0.int(seenAt) }
                    if db.changes == 1 { continue }
                }
                try sources.run(key: series) { binder in
                    binder.int(source)
                    if id.isNetworkHash { binder.int(seenAt) } else { binder.null() }
                }
                if db.changes == 1 {
                    newSources[series, default: (0, false)].count += 1
                    if id == .trusted { newSources[series, default: (0, false)].trusted = true }
                }
            }
        }
        try upsert(Self.modelScreens, delta.screens) { key, count, row in
            row.text(key.model); row.text(key.screen.description); row.int(count)
        }
        try writeReleases(delta.releases)
        let newReleaseSources = try writeReleaseSources(delta.releaseSources, seenAt: seenAt)
        try boundReleases(of: Set(newReleaseSources.keys.map(\.series)))
        try writeScreens(delta.screenCounts)
        let newScreenSources = try writeScreenSources(delta.screenSources, seenAt: seenAt)
        try boundScreens(of: Set(newScreenSources.keys.map(\.series)))
        try writeDayVotes(delta.dayVotes)
        try writeDaySources(delta.daySources)
        return WrittenSources(keys: newSources, releases: newReleaseSources, screens: newScreenSources)
    }

    /// Upserts a row for each entry of `entries`, its parameters appended by `row`, in
    /// multi-row statements (`run(_:_:)`), through the store's reused `rows` buffers.
    func upsert<Key, Value>(_ upsert: MultiRowUpsert, _ entries: [Key: Value],
                            _ row: (Key, Value, inout SQLiteRows) -> Void) throws(SQLiteError) {
        guard !entries.isEmpty else { return }
        var gathered = rows
        rows = SQLiteRows()  // `gathered` holds the buffers alone: appending copies nothing
        defer {
            gathered.removeParameters()
            rows = gathered
        }
        for (key, value) in entries { row(key, value, &gathered) }
        try run(upsert, &gathered)
    }
}

extension SQLiteStatement {
    /// Runs with a key's five columns as parameters 1-5 (`model, os_major, language, orientation,
    /// keyboard_type`, the order every keyed statement here starts with), then `rest`'s from 6.
    /// The texts are bound in place, without the copy and the array a `[SQLiteValue]` costs a row.
    func run(key: SeriesKey, _ rest: (inout SQLiteBinder) -> Void) throws(SQLiteError) {
        try finish(step(key: key, rest))
    }

    /// `run(key:_:)` without the throw (`finish` makes it), for a caller binding text of its own.
    func step(key: SeriesKey, _ rest: (inout SQLiteBinder) -> Void) -> (status: Int32, failedAt: Int32) {
        key.model.withCString { model in
            key.language.withCString { language in
                key.orientation.rawValue.withCString { orientation in
                    key.keyboardType.withCString { keyboardType in
                        step { binder in
                            binder.text(model)
                            binder.int(Int64(key.osMajor))
                            binder.text(language)
                            binder.text(orientation)
                            binder.text(keyboardType)
                            rest(&binder)
                        }
                    }
                }
            }
        }
    }
}
