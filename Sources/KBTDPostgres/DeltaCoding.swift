import KBTDCore

/// A compact text form of an `AggregateDelta` for `commit_log`: one line per
/// count, fields separated by `|`. Models, languages and keyboard types are
/// validated at ingest to letters, digits and `,._-`, so `|` and newlines never
/// occur inside a field.
enum DeltaCoding {
    static func encode(_ delta: AggregateDelta) -> String {
        var lines: [String] = []
        func key(_ series: SeriesKey) -> String {
            "\(series.model)|\(series.osMajor)|\(series.language)|\(series.orientation.rawValue)|\(series.keyboardType)"
        }
        for (k, count) in delta.heights { lines.append("h|\(key(k.series))|\(k.placement.rawValue)|\(k.halfPoints)|\(count)") }
        for (k, count) in delta.animations {
            lines.append("a|\(key(k.series))|\(k.event.rawValue)|\(k.bin.durationMs)|\(k.bin.curve)|\(count)")
        }
        for (k, count) in delta.coldStarts { lines.append("c|\(key(k.series))|\(k.preloaded ? 1 : 0)|\(k.bucket)|\(count)") }
        for (k, count) in delta.safeAreas { lines.append("s|\(key(k.series))|\(k.halfPoints)|\(count)") }
        for (k, count) in delta.votes { lines.append("v|\(key(k.series))|\(k.halfPoints)|\(count)") }
        for (series, ids) in delta.sources {
            for id in ids { lines.append("k|\(key(series))|\(id.value)") }
        }
        for (k, count) in delta.screens { lines.append("m|\(k.model)|\(k.screen.description)|\(count)") }
        for (k, count) in delta.releases {
            lines.append("r|\(key(k.series))|\(k.minor)|\(k.halfPoints)|\(count.samples)|\(count.votes)")
        }
        for (k, count) in delta.dayVotes { lines.append("d|\(key(k.series))|\(k.day)|\(k.halfPoints)|\(count)") }
        for (k, ids) in delta.releaseSources {
            for id in ids { lines.append("e|\(key(k.series))|\(k.minor)|\(id.value)") }
        }
        for (k, ids) in delta.daySources {
            for id in ids { lines.append("n|\(key(k.series))|\(k.day)|\(id.value)") }
        }
        // Per reported screen (schema v13): `z` counts, `w` sources; an older kbtd skips both.
        for (k, count) in delta.screenCounts {
            lines.append("z|\(key(k.series))|\(k.screen.description)|\(k.halfPoints)|\(count.samples)|\(count.votes)")
        }
        for (k, ids) in delta.screenSources {
            for id in ids { lines.append("w|\(key(k.series))|\(k.screen.description)|\(id.value)") }
        }
        return lines.joined(separator: "\n")
    }

    /// Reads `encode`'s output back; lines it cannot read are skipped (a newer kbtd's kinds).
    static func decode(_ text: String) -> AggregateDelta {
        var delta = AggregateDelta()
        for line in text.split(separator: "\n") {
            let f = line.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            guard let kind = f.first else { continue }
            if kind == "m" {
                guard f.count == 4, let screen = ScreenSize(f[2]), let count = Int64(f[3]) else { continue }
                delta.screens[ModelScreenKey(model: f[1], screen: screen), default: 0] += count
                continue
            }
            guard f.count >= 7, let osMajor = Int(f[2]), let orientation = Orientation(rawValue: f[4]) else { continue }
            let series = SeriesKey(model: f[1], osMajor: osMajor, language: f[3], orientation: orientation, keyboardType: f[5])
            switch (kind, f.count) {
            case ("h", 9):
                guard let placement = Placement(rawValue: f[6]), let half = Int(f[7]), let count = Int64(f[8]) else { continue }
                delta.heights[HeightCountKey(series: series, placement: placement, halfPoints: half), default: 0] += count
            case ("a", 10):
                guard let event = KeyboardEvent(rawValue: f[6]), let ms = Int(f[7]), let curve = Int(f[8]),
                      let count = Int64(f[9]) else { continue }
                delta.animations[AnimationCountKey(series: series, event: event, bin: AnimationBin(durationMs: ms, curve: curve)),
                                 default: 0] += count
            case ("c", 9):
                guard let bucket = Int(f[7]), let count = Int64(f[8]) else { continue }
                delta.coldStarts[ColdStartCountKey(series: series, preloaded: f[6] == "1", bucket: bucket), default: 0] += count
            case ("s", 8):
                guard let half = Int(f[6]), let count = Int64(f[7]) else { continue }
                delta.safeAreas[SeriesBin(series: series, halfPoints: half), default: 0] += count
            case ("v", 8):
                guard let half = Int(f[6]), let count = Int64(f[7]) else { continue }
                delta.votes[SeriesBin(series: series, halfPoints: half), default: 0] += count
            case ("r", 10):
                guard let minor = Int(f[6]), let half = Int(f[7]), let samples = Int64(f[8]), let votes = Int64(f[9]) else { continue }
                let bin = ReleaseBin(series: series, minor: minor, halfPoints: half)
                delta.releases[bin, default: .zero] += ReleaseCount(samples: samples, votes: votes)
            case ("d", 9):
                guard let day = Int(f[6]), let half = Int(f[7]), let count = Int64(f[8]) else { continue }
                delta.dayVotes[DayVoteBin(series: series, day: day, halfPoints: half), default: 0] += count
            case ("e", 8):
                guard let minor = Int(f[6]), let id = UInt64(f[7]) else { continue }
                delta.releaseSources[ReleaseKey(series: series, minor: minor), default: []].insert(SourceID(id))
            case ("n", 8):
                guard let day = Int(f[6]), let id = UInt64(f[7]) else { continue }
                delta.daySources[DayKey(series: series, day: day), default: []].insert(SourceID(id))
            case ("z", 10):
                guard let screen = ScreenSize(f[6]), let half = Int(f[7]), let samples = Int64(f[8]), let votes = Int64(f[9]) else { continue }
                delta.screenCounts[ScreenBin(series: series, screen: screen, halfPoints: half), default: .zero]
                    += ReleaseCount(samples: samples, votes: votes)
            case ("w", 8):
                guard let screen = ScreenSize(f[6]), let id = UInt64(f[7]) else { continue }
                delta.screenSources[ScreenVariantKey(series: series, screen: screen), default: []].insert(SourceID(id))
            case ("k", 7):
                guard let id = UInt64(f[6]) else { continue }
                delta.sources[series, default: []].insert(SourceID(id))
            default:
                continue
            }
        }
        return delta
    }

    /// The day's budgets a commit spent (`SourcePolicy`, `KeyAdmission`), appended to its
    /// `commit_log` text so the other nodes spend them too: `l|day|source|group|series|bin|votes|reserve`
    /// and `q|day|source|created`. `decode` above (and older kbtd) skips these lines.
    static func encode(_ ledgers: [SourceLedger]) -> String {
        var lines: [String] = []
        for ledger in ledgers {
            for row in ledger.votes {
                lines.append("l|\(ledger.day)|\(row.source.value)|\(row.group.value)|\(row.key)|\(row.halfPoints)|\(row.votes)|\(row.reserve ? 1 : 0)")
            }
            for (source, created) in ledger.newKeys.sorted(by: { $0.key < $1.key }) {
                lines.append("q|\(ledger.day)|\(source.value)|\(created)")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// Reads `encode(_: [SourceLedger])`'s lines out of a `commit_log` text, one ledger per day.
    static func decodeLedgers(_ text: String) -> [SourceLedger] {
        var byDay: [Int64: SourceLedger] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("l|") || line.hasPrefix("q|") {
            let f = line.split(separator: "|", omittingEmptySubsequences: false)
            guard let day = Int64(f[1]) else { continue }
            if f[0] == "l", f.count == 8, let source = UInt64(f[2]), let group = UInt64(f[3]), let key = UInt64(f[4]),
               let bin = Int(f[5]), let votes = Int64(f[6]) {
                byDay[day, default: SourceLedger(day: day)].votes.append(LedgerIncrement(
                    source: SourceID(source), group: SourceID(group), key: key, halfPoints: bin, votes: votes, reserve: f[7] == "1"))
            } else if f[0] == "q", f.count == 4, let source = UInt64(f[2]), let created = Int(f[3]) {
                byDay[day, default: SourceLedger(day: day)].newKeys[SourceID(source), default: 0] += created
            }
        }
        return byDay.keys.sorted().map { byDay[$0]! }
    }
}
