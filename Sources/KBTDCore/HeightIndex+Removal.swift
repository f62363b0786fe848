extension HeightIndex {
    /// Removes exact keys (displaced from a full index, or deleted from the
    /// store) and rebuilds the coarser levels they fed from the exact keys
    /// that remain, merged in key order as a start-up load merges them: the
    /// index is then what loading the remaining keys from the store builds.
    /// Keys not in the index are ignored. One pass over the exact keys per call.
    public mutating func remove(_ keys: some Sequence<SeriesKey>) {
        let keys = Array(keys)
        // A removed key's releases and stats leave the decisions of its keyboard and major.
        var scopes: [ReleaseMoveScope: Set<String>] = [:]
        for key in keys {
            scopes[ReleaseMoveScope(language: LanguageKey(language: key.language, orientation: key.orientation, keyboardType: key.keyboardType),
                                    osMajor: key.osMajor), default: []].insert(key.model)
        }
        releaseMoves = ReleaseMoveCache(keeping: releaseMoves, except: scopes)
        var modelLanguageLevels: Set<PackedLevelKey> = []
        var modelLevels: Set<PackedLevelKey> = []
        for key in keys {
            guard let model = strings.id(key.model), let language = strings.id(key.language),
                  let type = strings.id(key.keyboardType), let os = strings.id(os: key.osMajor) else { continue }
            let kind = PackedLevelKey.kind(orientation: key.orientation, keyboardType: type)
            guard let slot = seriesSlots.removeValue(forKey: PackedSeriesKey(model: model, language: language, kind: kind, os: os))
            else { continue }
            removeReleases(ofSlot: slot, major: key.osMajor)
            removeScreens(ofSlot: slot)
            removeDayVotes(ofSlot: slot)
            removeDaySources(ofSlot: slot)
            modelLanguageLevels.insert(PackedLevelKey(model: model, language: language, kind: kind))
            modelLevels.insert(PackedLevelKey(model: model, language: PackedLevelKey.anyLanguage, kind: kind))
        }
        guard !modelLevels.isEmpty else { return }
        // The exact keys that still feed each affected level, and the OS majors still docked.
        var modelLanguageFeeds: [PackedLevelKey: [(SeriesKey, UInt32)]] = [:]
        var modelFeeds: [PackedLevelKey: [(SeriesKey, UInt32)]] = [:]
        var docked: Set<Int> = []
        for (packed, slot) in seriesSlots {
            let modelLanguage = PackedLevelKey(model: packed.model, language: packed.language, kind: packed.kind)
            let model = PackedLevelKey(model: packed.model, language: PackedLevelKey.anyLanguage, kind: packed.kind)
            if modelLanguageLevels.contains(modelLanguage) { modelLanguageFeeds[modelLanguage, default: []].append((seriesKey(packed), slot)) }
            if modelLevels.contains(model) { modelFeeds[model, default: []].append((seriesKey(packed), slot)) }
            if slots[Int(slot)].heights.total > 0 { docked.insert(strings[os: packed.os]) }
        }
        osMajors = docked
        for level in modelLanguageLevels {
            modelLanguageSlots[level] = rebuilt(from: modelLanguageFeeds[level] ?? [])
            if modelLanguageSlots[level] == nil {
                modelLanguagesByModel[level.model]?.removeAll { $0 == level }
                if modelLanguagesByModel[level.model]?.isEmpty == true { modelLanguagesByModel[level.model] = nil }
            }
            let still = modelLanguageSlots[level].map { slots[Int($0.slot)].heights.total > 0 } ?? false
            if !still {
                let languageKey = LanguageKey(language: strings[level.language], orientation: PackedLevelKey.orientation(of: level.kind),
                                              keyboardType: strings[PackedLevelKey.keyboardType(of: level.kind)])
                modelsByLanguage[languageKey]?.remove(strings[level.model])
                if modelsByLanguage[languageKey]?.isEmpty == true { modelsByLanguage[languageKey] = nil }
            }
        }
        for level in modelLevels { modelSlots[level] = rebuilt(from: modelFeeds[level] ?? []) }
        compactSlotsIfSparse()
    }

    /// A coarser level rebuilt from the exact keys that feed it: gone with none,
    /// sharing the slot of a single one, else its own merge of them in key order.
    private mutating func rebuilt(from feeds: [(SeriesKey, UInt32)]) -> LevelSlot? {
        switch feeds.count {
        case 0: return nil
        case 1: return LevelSlot(slot: feeds[0].1, shared: true)
        default:
            var stats = LevelStats()
            for (_, slot) in feeds.sorted(by: { $0.0 < $1.0 }) { stats.merge(slots[Int(slot)]) }
            slots.append(stats)
            return LevelSlot(slot: UInt32(slots.count - 1), shared: false)
        }
    }

    /// Drops the slots no level refers to any more once they are most of the
    /// array, so memory follows the keys held however many come and go.
    private mutating func compactSlotsIfSparse() {
        var live: [UInt32: UInt32] = [:]
        live.reserveCapacity(seriesSlots.count * 2)
        for slot in seriesSlots.values { live[slot] = 0 }
        for entry in modelLanguageSlots.values where !entry.shared { live[entry.slot] = 0 }
        for entry in modelSlots.values where !entry.shared { live[entry.slot] = 0 }
        guard slots.count > 2 * live.count + 1_024 else { return }
        var kept: [LevelStats] = []
        kept.reserveCapacity(live.count)
        for old in live.keys.sorted() {
            live[old] = UInt32(kept.count)
            kept.append(slots[Int(old)])
        }
        slots = kept
        var keptLists: [SlotLists] = []
        keptLists.reserveCapacity(seriesSlots.count)
        for (key, slot) in seriesSlots {
            let new = live[slot]!
            let held = lists(of: slot)
            if held.releases != Self.noEntry || held.screens != Self.noEntry || held.dayVotes != Self.noEntry
                || held.daySources != Self.noEntry {
                if Int(new) >= keptLists.count { keptLists.append(contentsOf: repeatElement(SlotLists(), count: Int(new) + 1 - keptLists.count)) }
                keptLists[Int(new)] = lists(of: slot)
            }
            seriesSlots[key] = new
        }
        slotLists = keptLists
        for (key, entry) in modelLanguageSlots { modelLanguageSlots[key] = LevelSlot(slot: live[entry.slot]!, shared: entry.shared) }
        for (key, entry) in modelSlots { modelSlots[key] = LevelSlot(slot: live[entry.slot]!, shared: entry.shared) }
    }
}
