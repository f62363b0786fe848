import KBTDCore

/// The writer's hourly housekeeping, on its own thread between commits: batch ids past retention,
/// keys never confirmed or long idle (deleted in slices so commits go on between them), and client
/// networks' identifiers past `source_retention_days`. A failure is logged; ingest goes on.
extension GroupCommitWriter {
    /// One round of housekeeping, after every commit already handed to the sync thread is applied
    /// (the pruning removes keys from the index).
    func runHourlyUpkeep(_ store: any TelemetryStore, now: Double, upkeep: Upkeep) async {
        awaitSyncThread()
        await prune(store, before: Int64(now - upkeep.retention))
        if upkeep.unconfirmedKeyRetention > 0 {
            await pruneKeys(store, before: Int64(now - upkeep.unconfirmedKeyRetention), onForget: upkeep.onForget)
        }
        if upkeep.idleKeyRetention > 0 {
            await pruneIdleKeys(store, before: Int64(now - upkeep.idleKeyRetention), onForget: upkeep.onForget)
        }
        // After the keys: an unconfirmed key goes before its sources would retire (equal horizons).
        if upkeep.sourceRetention > 0 {
            await retireSources(store, before: Int64(now - upkeep.sourceRetention))
        }
    }

    /// Deletes keys that never gathered `min_sources` networks, in slices so
    /// commits go on between them.
    func pruneKeys(_ store: any TelemetryStore, before cutoff: Int64, onForget: ([SeriesKey]) -> Void) async {
        if let total = await deleteKeysInSlices("unconfirmed keys", onForget: onForget, {
            try await store.pruneUnconfirmedKeys(firstSeenBefore: cutoff, limit: $0)
        }) {
            logger.info("forgot \(total) keys no trusted peer or min_sources networks confirmed in time")
        }
    }

    /// Runs `delete` a slice of 5,000 keys at a time until a slice comes back short, handing
    /// each slice to `onForget`; returns how many keys went when any did (a failure is logged).
    func deleteKeysInSlices(_ what: String, onForget: ([SeriesKey]) -> Void,
                            _ delete: (Int) async throws -> [SeriesKey]) async -> Int? {
        var total = 0
        do {
            while true {
                let removed = try await delete(5_000)
                onForget(removed)
                total += removed.count
                if removed.count < 5_000 { break }
            }
        } catch {
            logger.warning("pruning \(what) failed", metadata: ["error": "\(error)"])
        }
        return total > 0 ? total : nil
    }

    /// Replaces client networks' keyed hashes past retention with random identifiers.
    func retireSources(_ store: any TelemetryStore, before cutoff: Int64) async {
        do {
            let retired = try await store.retireSources(seenBefore: cutoff)
            if retired > 0 { logger.info("retired \(retired) client network identifiers past source_retention_days") }
        } catch {
            logger.warning("retiring source identifiers failed", metadata: ["error": "\(error)"])
        }
    }

    /// Deletes keys without trusted data that nobody reported since `cutoff`, in slices.
    func pruneIdleKeys(_ store: any TelemetryStore, before cutoff: Int64, onForget: ([SeriesKey]) -> Void) async {
        if let total = await deleteKeysInSlices("idle keys", onForget: onForget, {
            try await store.pruneIdleKeys(lastSeenBefore: cutoff, limit: $0)
        }) {
            logger.info("forgot \(total) keys without trusted data that nobody reported in idle_key_retention_days")
        }
    }

    func prune(_ store: any TelemetryStore, before cutoff: Int64) async {
        do {
            let removed = try await store.pruneBatchIDs(receivedBefore: cutoff)
            if removed > 0 { logger.info("forgot \(removed) batch ids past retention") }
        } catch {
            logger.warning("pruning batch ids failed", metadata: ["error": "\(error)"])
        }
    }
}
