/// Count keys of the four aggregate tables. Each maps 1:1 onto a row of the
/// SQLite schema, so aggregates from two stores merge by adding counts.
public struct HeightCountKey: Hashable, Sendable {
    public var series: SeriesKey
    public var placement: Placement
    public var halfPoints: Int

    public init(series: SeriesKey, placement: Placement, halfPoints: Int) {
        self.series = series
        self.placement = placement
        self.halfPoints = halfPoints
    }
}

public struct AnimationCountKey: Hashable, Sendable {
    public var series: SeriesKey
    public var event: KeyboardEvent
    public var bin: AnimationBin

    public init(series: SeriesKey, event: KeyboardEvent, bin: AnimationBin) {
        self.series = series
        self.event = event
        self.bin = bin
    }
}

public struct ColdStartCountKey: Hashable, Sendable {
    public var series: SeriesKey
    public var preloaded: Bool
    public var bucket: Int

    public init(series: SeriesKey, preloaded: Bool, bucket: Int) {
        self.series = series
        self.preloaded = preloaded
        self.bucket = bucket
    }
}

/// One height bin (half points) of one key: safe-area counts and estimator votes.
public struct SeriesBin: Hashable, Sendable {
    public var series: SeriesKey
    public var halfPoints: Int

    public init(series: SeriesKey, halfPoints: Int) {
        self.series = series
        self.halfPoints = halfPoints
    }
}

// The count keys hash one word (`SeriesKey.word`): their series' hash with their other fields
// folded in, mixed with a table's seed (`SeriesKey.mix`). Every commit hashes each of them when it
// adds up its batches; a `Hasher` fed the series' hash and each field cost about ten times as much.

extension HeightCountKey {
    public func hash(into hasher: inout Hasher) { hasher.combine(word) }
    public func _rawHashValue(seed: Int) -> Int { SeriesKey.mix(word, seed: seed) }
    private var word: Int { series.word(placement.ordinal, halfPoints) }
}

extension AnimationCountKey {
    public func hash(into hasher: inout Hasher) { hasher.combine(word) }
    public func _rawHashValue(seed: Int) -> Int { SeriesKey.mix(word, seed: seed) }
    private var word: Int { series.word(event.ordinal, bin.durationMs, bin.curve) }
}

extension ColdStartCountKey {
    public func hash(into hasher: inout Hasher) { hasher.combine(word) }
    public func _rawHashValue(seed: Int) -> Int { SeriesKey.mix(word, seed: seed) }
    private var word: Int { series.word(preloaded ? 1 : 0, bucket) }
}

extension SeriesBin {
    public func hash(into hasher: inout Hasher) { hasher.combine(word) }
    public func _rawHashValue(seed: Int) -> Int { SeriesKey.mix(word, seed: seed) }
    private var word: Int { series.word(halfPoints) }
}

extension ReleaseBin {
    public func hash(into hasher: inout Hasher) { hasher.combine(word) }
    public func _rawHashValue(seed: Int) -> Int { SeriesKey.mix(word, seed: seed) }
    private var word: Int { series.word(minor, halfPoints) }
}

extension ReleaseKey {
    public func hash(into hasher: inout Hasher) { hasher.combine(word) }
    public func _rawHashValue(seed: Int) -> Int { SeriesKey.mix(word, seed: seed) }
    private var word: Int { series.word(minor) }
}

extension DayVoteBin {
    public func hash(into hasher: inout Hasher) { hasher.combine(word) }
    public func _rawHashValue(seed: Int) -> Int { SeriesKey.mix(word, seed: seed) }
    private var word: Int { series.word(day, halfPoints) }
}

extension Placement {
    /// The case's position, for hashing (`SeriesKey.word`).
    var ordinal: Int {
        switch self {
        case .docked: 0
        case .floating: 1
        case .hardware: 2
        }
    }
}

extension KeyboardEvent {
    /// The case's position, for hashing (`SeriesKey.word`).
    var ordinal: Int {
        switch self {
        case .show: 0
        case .hide: 1
        case .change: 2
        }
    }
}

/// Counts to add to the store: what one batch (or many, merged) contributes.
///
/// The HTTP handler reduces a batch to this before it queues it for the
/// writer, so the queue holds compact counts, not samples, and the writer runs
/// one upsert per key touched per commit rather than one per sample.
public struct AggregateDelta: Sendable, Equatable {
    public var heights: [HeightCountKey: Int64] = [:]
    public var animations: [AnimationCountKey: Int64] = [:]
    public var coldStarts: [ColdStartCountKey: Int64] = [:]
    public var safeAreas: [SeriesBin: Int64] = [:]
    /// Docked height counts as the estimator weighs them (see `SourcePolicy`):
    /// equal to the docked `heights` for trusted sources, capped per source otherwise.
    public var votes: [SeriesBin: Int64] = [:]
    /// Which sources reported each key (`SourceID.trusted` for trusted peers).
    public var sources: [SeriesKey: Set<SourceID>] = [:]
    /// Batches per (model, reported screen): the `screen+language` level's directory.
    public var screens: [ModelScreenKey: Int64] = [:]
    /// Docked samples and votes per OS release (major.minor) and bin (`recordRelease(os:)`):
    /// what lets a point release that moved keyboards answer for its own phones.
    public var releases: [ReleaseBin: ReleaseCount] = [:]
    /// Which sources reported each key on each release (`recordRelease(os:)`; `release_sources`):
    /// a release answers on its own only with `min_sources` of its own. An index counts each
    /// source it is given here as a new one (`HeightIndex.apply`).
    public var releaseSources: [ReleaseKey: Set<SourceID>] = [:]
    /// Docked samples and votes per reported screen and bin (`recordScreen(_:)`): what lets a
    /// Display Zoom phone be answered its own height (`ScreenVariants.swift`).
    public var screenCounts: [ScreenBin: ReleaseCount] = [:]
    /// Which sources reported each key on each screen (`recordScreen(_:)`; `screen_sources`), counted
    /// by an index as `releaseSources` are: each source it is given is a new one.
    public var screenSources: [ScreenVariantKey: Set<SourceID>] = [:]
    /// Votes per UTC day of receipt (`recordDay(receivedAt:)`): what ages the estimate's votes (`VoteAge.swift`).
    public var dayVotes: [DayVoteBin: Int64] = [:]
    /// Which sources' votes weighed on each key per UTC day (`recordDay(receivedAt:)`; `day_sources`):
    /// the recent votes outvote the all-time ones only with `min_sources` networks of their own.
    public var daySources: [DayKey: Set<SourceID>] = [:]

    public init() {}

    /// The counts one batch's accepted samples contribute.
    ///
    /// - Every sample counts once in `animations` (so per-key sample totals are
    ///   the sum of that table).
    /// - `show` and `change` samples add their system height (accessory removed)
    ///   under their placement; `hide` frames are off screen and say nothing.
    /// - Docked show/change samples add their bottom safe area.
    /// - `cold_start_ms` adds a log bucket, split by `preloaded`.
    ///
    /// A batch holds few keys: each sample finds its key among the batch's
    /// keys so far (interned strings compare by identity first) and counts in
    /// small tables keyed by numbers; each `SeriesKey` is hashed once per key
    /// and table, not several times per sample. The counts are those of
    /// `add(_:device:)` sample by sample (`KBTDReference`'s
    /// `sampleBySample`; `IntakeOracle` checks it).
    public init(batch: ValidatedBatch) {
        var keys: [SeriesKey] = []
        var groups: [SeriesCounts] = []
        var last = -1
        for sample in batch.samples {
            var group = last
            if group < 0 || !Self.matches(keys[group], sample) {
                group = keys.firstIndex { Self.matches($0, sample) } ?? -1
                if group < 0 {
                    keys.append(SeriesKey(model: batch.device.model, osMajor: batch.device.osMajor, language: sample.language,
                                          orientation: sample.orientation, keyboardType: sample.keyboardType))
                    groups.append(SeriesCounts())
                    group = keys.count - 1
                }
                last = group
            }
            groups[group].add(sample)
        }
        for (series, counts) in zip(keys, groups) {
            counts.flush(series, into: &self)
        }
        if let screen = batch.device.screen, !batch.samples.isEmpty {
            screens[ModelScreenKey(model: batch.device.model, screen: screen), default: 0] += 1
        }
    }

    private static func matches(_ key: SeriesKey, _ sample: Sample) -> Bool {
        key.orientation == sample.orientation && key.language == sample.language && key.keyboardType == sample.keyboardType
    }

    public mutating func add(_ sample: Sample, device: Device) {
        let series = SeriesKey(
            model: device.model, osMajor: device.osMajor, language: sample.language,
            orientation: sample.orientation, keyboardType: sample.keyboardType)
        animations[AnimationCountKey(series: series, event: sample.event,
                                     bin: AnimationBin(duration: sample.duration, curve: sample.curve)), default: 0] += 1
        if sample.event != .hide {
            let placement = sample.placement
            let bin = HeightBin.halfPoints(sample.systemHeight)
            heights[HeightCountKey(series: series, placement: placement, halfPoints: bin), default: 0] += 1
            if placement == .docked {
                votes[SeriesBin(series: series, halfPoints: bin), default: 0] += 1
                sources[series, default: []].insert(.trusted)
                safeAreas[SeriesBin(series: series, halfPoints: HeightBin.halfPoints(sample.safeAreaBottom)), default: 0] += 1
            }
        }
        if let coldStart = sample.coldStartMs {
            coldStarts[ColdStartCountKey(series: series, preloaded: sample.preloaded,
                                         bucket: LogBucket.index(coldStart)), default: 0] += 1
        }
    }

    /// Adds another delta's counts to this one.
    public mutating func merge(_ other: AggregateDelta) {
        heights.merge(other.heights, uniquingKeysWith: +)
        animations.merge(other.animations, uniquingKeysWith: +)
        coldStarts.merge(other.coldStarts, uniquingKeysWith: +)
        safeAreas.merge(other.safeAreas, uniquingKeysWith: +)
        votes.merge(other.votes, uniquingKeysWith: +)
        sources.merge(other.sources) { $0.union($1) }
        screens.merge(other.screens, uniquingKeysWith: +)
        releases.merge(other.releases, uniquingKeysWith: +)
        releaseSources.merge(other.releaseSources) { $0.union($1) }
        screenCounts.merge(other.screenCounts, uniquingKeysWith: +)
        screenSources.merge(other.screenSources) { $0.union($1) }
        dayVotes.merge(other.dayVotes, uniquingKeysWith: +)
        daySources.merge(other.daySources) { $0.union($1) }
    }

    public var isEmpty: Bool {
        heights.isEmpty && animations.isEmpty && coldStarts.isEmpty && safeAreas.isEmpty && screens.isEmpty
    }
}

/// One key's counts within a batch, keyed by numbers only (see
/// `AggregateDelta.init(batch:)`; `CountedBatch` fills them straight from the scan).
struct SeriesCounts: Sendable {
    struct Animation: Hashable, Sendable {
        var event: KeyboardEvent
        var bin: AnimationBin
    }

    struct Height: Hashable, Sendable {
        var placement: Placement
        var halfPoints: Int
    }

    struct ColdStart: Hashable, Sendable {
        var preloaded: Bool
        var bucket: Int
    }

    var animations = SmallCounts<Animation>()
    var heights = SmallCounts<Height>()
    var votes = SmallCounts<Int>()
    var safeAreas = SmallCounts<Int>()
    var coldStarts = SmallCounts<ColdStart>()

    /// `AggregateDelta.add(_:device:)` for one key.
    mutating func add(_ sample: Sample) {
        add(event: sample.event, duration: sample.duration, curve: sample.curve, placement: sample.placement,
            systemHeight: sample.systemHeight, safeAreaBottom: sample.safeAreaBottom, coldStartMs: sample.coldStartMs,
            preloaded: sample.preloaded)
    }

    /// The same from a sample's values (no `Sample` built).
    @inline(__always)
    mutating func add(event: KeyboardEvent, duration: Double, curve: Int, placement: Placement, systemHeight: Double,
                      safeAreaBottom: Double, coldStartMs: Double?, preloaded: Bool) {
        animations.add(Animation(event: event, bin: AnimationBin(durationMs: Self.rounded(duration * 1000), curve: curve)))
        if event != .hide {
            let bin = Self.rounded(systemHeight * 2)
            heights.add(Height(placement: placement, halfPoints: bin))
            if placement == .docked {
                votes.add(bin)
                safeAreas.add(Self.rounded(safeAreaBottom * 2))
            }
        }
        if let coldStartMs {
            coldStarts.add(ColdStart(preloaded: preloaded, bucket: LogBucket.index(coldStartMs)))
        }
    }

    /// `Int(value.rounded())` (half away from zero, as `HeightBin` and
    /// `AnimationBin` round) without libm's `round` call for the values a
    /// checked sample gives (0 up to 2^52): the truncation and what is left
    /// of `value` above it, which the subtraction gives exactly. Anything
    /// else (negative, huge, not a number) is `rounded()`'s.
    @inline(__always)
    static func rounded(_ value: Double) -> Int {
        guard value >= 0, value < 0x1p52 else { return Int(value.rounded()) }
        let whole = Int(value)
        return value - Double(whole) >= 0.5 ? whole &+ 1 : whole
    }

    func flush(_ series: SeriesKey, into delta: inout AggregateDelta) {
        animations.forEach { key, count in
            delta.animations[AnimationCountKey(series: series, event: key.event, bin: key.bin), default: 0] += count
        }
        heights.forEach { key, count in
            delta.heights[HeightCountKey(series: series, placement: key.placement, halfPoints: key.halfPoints), default: 0] += count
        }
        votes.forEach { bin, count in
            delta.votes[SeriesBin(series: series, halfPoints: bin), default: 0] += count
        }
        if !votes.isEmpty { delta.sources[series, default: []].insert(.trusted) }
        safeAreas.forEach { bin, count in
            delta.safeAreas[SeriesBin(series: series, halfPoints: bin), default: 0] += count
        }
        coldStarts.forEach { key, count in
            delta.coldStarts[ColdStartCountKey(series: series, preloaded: key.preloaded, bucket: key.bucket), default: 0] += count
        }
    }
}

/// Counts by key for the few distinct keys one series sees in a batch: the
/// first `linearLimit` keys in arrays searched linearly (cheaper than hashing
/// for a handful), any further ones in a dictionary (so a batch of thousands
/// of distinct bins stays linear in time).
struct SmallCounts<Key: Hashable & Sendable>: Sendable {
    static var linearLimit: Int { 16 }
    var keys: [Key] = []
    var counts: [Int64] = []
    var overflow: [Key: Int64] = [:]

    var isEmpty: Bool { keys.isEmpty }
    /// Distinct keys counted.
    var count: Int { keys.count + overflow.count }

    @inline(__always)
    mutating func add(_ key: Key) {
        for i in keys.indices where keys[i] == key {
            counts[i] += 1
            return
        }
        if keys.count < Self.linearLimit {
            keys.append(key)
            counts.append(1)
        } else {
            overflow[key, default: 0] += 1
        }
    }

    func forEach(_ body: (Key, Int64) -> Void) {
        for i in keys.indices { body(keys[i], counts[i]) }
        for (key, count) in overflow { body(key, count) }
    }
}

extension AggregateDelta {
    /// Every key with a count here (every sample counts in `animations`).
    public var seriesKeys: Set<SeriesKey> {
        var keys = Set<SeriesKey>(minimumCapacity: sources.count)
        for key in animations.keys { keys.insert(key.series) }
        for key in heights.keys { keys.insert(key.series) }
        for key in votes.keys { keys.insert(key.series) }
        for key in sources.keys { keys.insert(key) }
        return keys
    }

    /// The counts of the keys `isIncluded` keeps.
    public func filter(_ isIncluded: (SeriesKey) -> Bool) -> AggregateDelta {
        var kept = AggregateDelta()
        kept.heights = heights.filter { isIncluded($0.key.series) }
        kept.animations = animations.filter { isIncluded($0.key.series) }
        kept.coldStarts = coldStarts.filter { isIncluded($0.key.series) }
        kept.safeAreas = safeAreas.filter { isIncluded($0.key.series) }
        kept.votes = votes.filter { isIncluded($0.key.series) }
        kept.sources = sources.filter { isIncluded($0.key) }
        kept.releases = releases.filter { isIncluded($0.key.series) }
        kept.releaseSources = releaseSources.filter { isIncluded($0.key.series) }
        kept.screenCounts = screenCounts.filter { isIncluded($0.key.series) }
        kept.screenSources = screenSources.filter { isIncluded($0.key.series) }
        kept.dayVotes = dayVotes.filter { isIncluded($0.key.series) }
        kept.daySources = daySources.filter { isIncluded($0.key.series) }
        return kept
    }
}
