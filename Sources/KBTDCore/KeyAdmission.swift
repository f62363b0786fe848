/// Caps on how many aggregation keys kbtd will hold, whoever sends them.
///
/// Keys are the one thing clients create at will (any `device.model`, any
/// language tag), and each costs a row per table on disk and, once it may
/// answer, memory in the index. These caps make both bounded.
public struct KeyLimits: Sendable, Equatable {
    /// Distinct keys stored (answering or not); past it new keys are refused.
    public var maxKeys = 500_000
    /// Distinct languages one model may have; past it that model's new languages are refused.
    public var maxLanguagesPerModel = 200
    /// New keys one untrusted client network may create per UTC day.
    public var maxNewKeysPerSourcePerDay = 1_000
    /// Client networks tracked per day for that quota; past it unseen networks create no keys until the next day.
    public var maxTrackedSources = 100_000
    /// New keys the untrusted networks of one group (an IPv4 /16, an IPv6 /48)
    /// may create per UTC day together; refused asks count too.
    public var maxNewKeysPerGroupPerDay = 5_000
    /// Percent of `maxKeys` untrusted networks may fill on their own. Past it,
    /// an untrusted new key is stored only once `reserveGroups` groups asked
    /// for it the same day, up to half of the rest (the reserve); the last
    /// half is for trusted peers only.
    public var untrustedKeyShare = 80
    /// Distinct groups that must ask for a key before it may use the reserve (the estimator's `min_sources`).
    public var reserveGroups = 3

    /// Keys stored past which untrusted networks create keys only through the reserve.
    public var untrustedKeyLimit: Int { Int(Int64(maxKeys) * Int64(untrustedKeyShare) / 100) }
    /// Keys stored past which only trusted peers create keys.
    public var reserveKeyLimit: Int { untrustedKeyLimit + (maxKeys - untrustedKeyLimit) / 2 }

    public init() {}
}

/// Why a sample's key was refused (the sample is rejected with field `key`).
public enum KeyRefusal: String, Sendable, CaseIterable {
    case keyLimit = "key_limit"
    case languagesPerModel = "languages_per_model"
    case sourceQuota = "source_quota"
    case groupQuota = "group_quota"
    case untrustedShare = "untrusted_share"

    /// The per-sample reason in a batch receipt.
    public func reason(_ limits: KeyLimits) -> String {
        switch self {
        case .keyLimit: "new key refused: kbtd holds its maximum of \(limits.maxKeys) keys (max_keys)"
        case .languagesPerModel:
            "new key refused: this model already has \(limits.maxLanguagesPerModel) languages (max_languages_per_model)"
        case .sourceQuota:
            "new key refused: this client network created \(limits.maxNewKeysPerSourcePerDay) new keys today (max_new_keys_per_source_per_day)"
        case .groupQuota:
            "new key refused: this client network's /16 or /48 created \(limits.maxNewKeysPerGroupPerDay) new keys today (max_new_keys_per_group_per_day)"
        case .untrustedShare:
            "new key refused: untrusted networks filled their \(limits.untrustedKeyShare)% of max_keys; past it a key needs \(limits.reserveGroups) network groups (/16, /48) asking for it the same day (untrusted_key_share)"
        }
    }
}

/// Decides whether a sample may create a new aggregation key.
///
/// It remembers every stored key as a 64-bit fingerprint (8 bytes, not the
/// key's strings), each model's languages the same way, and per untrusted
/// source how many keys it created today. A key already stored is always
/// accepted; a new one must fit every cap in `KeyLimits`. Nothing here can be
/// reset by a client: the per-source counts start over only at the UTC day
/// boundary, and a full source table refuses newcomers rather than clearing.
public struct KeyAdmission: Sendable {
    public var limits: KeyLimits
    private var known: Set<UInt64> = []
    /// model → language → how many stored keys use that pair.
    private var languagesByModel: [UInt64: [UInt64: Int32]] = [:]
    private var createdToday: [SourceID: Int] = [:]
    private var day: Int64 = -1
    /// The capacity rules' own day-scoped state (`capacity(_:source:group:now:)`).
    private var capacityState = CapacityState()

    public init(limits: KeyLimits = KeyLimits()) {
        self.limits = limits
    }

    /// Keys currently remembered.
    public var keyCount: Int { known.count }

    /// Starts the day's per-network quotas from what the store kept (start-up), so a
    /// restart does not hand every network a fresh `max_new_keys_per_source_per_day`.
    public mutating func restore(day: Int64, created: [SourceID: Int]) {
        self.day = day
        createdToday = created
    }

    /// Adds the new keys networks created on another node the same day (its commit, read
    /// from the shared database). An earlier day is ignored; a later one starts the quotas over.
    public mutating func absorb(day: Int64, created: [SourceID: Int]) {
        guard day >= self.day else { return }
        if day > self.day {
            createdToday = [:]
            self.day = day
        }
        for (source, count) in created { createdToday[source, default: 0] += count }
    }

    /// Records a key that is already stored (start-up).
    public mutating func remember(_ key: SeriesKey) {
        if known.insert(key.fingerprint).inserted {
            languagesByModel[Fingerprint.of(key.model), default: [:]][Fingerprint.of(key.language), default: 0] += 1
        }
    }

    /// Forgets a key the store deleted (an unconfirmed key past retention).
    public mutating func forget(_ key: SeriesKey) {
        guard known.remove(key.fingerprint) != nil else { return }
        let model = Fingerprint.of(key.model)
        let language = Fingerprint.of(key.language)
        guard var languages = languagesByModel[model], let uses = languages[language] else { return }
        languages[language] = uses > 1 ? uses - 1 : nil
        languagesByModel[model] = languages.isEmpty ? nil : languages
    }

    /// Whether a sample of `key` from `source` may be stored; a new key that
    /// fits is remembered at once (a failed commit only leaves a reserved slot).
    /// `now` is Unix seconds.
    public mutating func admit(_ key: SeriesKey, source: SourceID, group: SourceID? = nil, now: Double) -> KeyRefusal? {
        let fingerprint = key.fingerprint
        if known.contains(fingerprint) { return nil }
        guard known.count < limits.maxKeys else { return .keyLimit }
        let model = Fingerprint.of(key.model)
        let language = Fingerprint.of(key.language)
        let languages = languagesByModel[model]
        if languages?[language] == nil, (languages?.count ?? 0) >= limits.maxLanguagesPerModel {
            return .languagesPerModel
        }
        if source != .trusted {
            let today = SourcePolicy.day(of: now)
            if today != day {
                createdToday = [:]
                day = today
            }
            let created = createdToday[source]
            if created == nil && createdToday.count >= limits.maxTrackedSources { return .sourceQuota }
            guard (created ?? 0) < limits.maxNewKeysPerSourcePerDay else { return .sourceQuota }
            createdToday[source] = (created ?? 0) + 1
            if let refusal = capacity(fingerprint, source: source, group: group ?? source, now: now) { return refusal }
        }
        known.insert(fingerprint)
        languagesByModel[model, default: [:]][language, default: 0] += 1
        return nil
    }
}

/// What the capacity rules remember for the current UTC day: new keys per
/// network group, and which groups asked for keys the untrusted share refused.
struct CapacityState: Sendable {
    var day: Int64 = -1
    var createdByGroup: [SourceID: Int] = [:]
    /// Key fingerprint → the distinct groups that asked for it today (at most `reserveGroups`).
    var askedBy: [UInt64: [SourceID]] = [:]
}

extension KeyAdmission {
    /// The rules that keep `maxKeys` from being filled for good by untrusted
    /// networks: a group's (/16, /48) daily share of new keys, and the untrusted
    /// share of `maxKeys` past which a key needs `reserveGroups` groups asking
    /// for it the same day. Both tables are bounded by `maxTrackedSources`
    /// entries and start over at 00:00 UTC.
    mutating func capacity(_ fingerprint: UInt64, source: SourceID, group: SourceID, now: Double) -> KeyRefusal? {
        let today = Int64((now / 86_400).rounded(.down))
        if today != capacityState.day { capacityState = CapacityState(day: today) }
        let created = capacityState.createdByGroup[group]
        if created == nil && capacityState.createdByGroup.count >= limits.maxTrackedSources { return .groupQuota }
        guard (created ?? 0) < limits.maxNewKeysPerGroupPerDay else { return .groupQuota }
        capacityState.createdByGroup[group] = (created ?? 0) + 1
        if keyCount < limits.untrustedKeyLimit { return nil }
        guard keyCount < limits.reserveKeyLimit else { return .keyLimit }
        var groups = capacityState.askedBy[fingerprint] ?? []
        if !groups.contains(group) {
            guard !groups.isEmpty || capacityState.askedBy.count < limits.maxTrackedSources else { return .untrustedShare }
            groups.append(group)
        }
        guard groups.count >= limits.reserveGroups else {
            capacityState.askedBy[fingerprint] = groups
            return .untrustedShare
        }
        capacityState.askedBy[fingerprint] = nil
        return nil
    }
}

/// 64-bit FNV-1a, kbtd's one non-cryptographic hash: keys are remembered by
/// these instead of their strings, and
/// answers' ETags are made of them.
public enum Fingerprint {
    public static let offsetBasis: UInt64 = 0xcbf2_9ce4_8422_2325

    /// Hashes `bytes`, continuing from `hash` (the offset basis for a new hash).
    public static func of(bytes: some Sequence<UInt8>, continuing hash: UInt64 = offsetBasis) -> UInt64 {
        var hash = hash
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        return hash
    }

    public static func of(_ text: String) -> UInt64 { of(text, continuing: offsetBasis) }

    /// Hashes `text`'s UTF-8 from its contiguous storage where it has one (every native and
    /// small string), not through the view's indices byte by byte: the same value as `of(bytes: text.utf8)`.
    @inline(__always)
    static func of(_ text: String, continuing hash: UInt64) -> UInt64 {
        text.utf8.withContiguousStorageIfAvailable { of(bytes: $0, continuing: hash) } ?? of(bytes: text.utf8, continuing: hash)
    }

    /// Continues a fingerprint with a separator and more text.
    static func combine(_ hash: UInt64, _ text: String) -> UInt64 {
        of(text, continuing: separated(hash))
    }

    /// Continues a fingerprint with a separator and an integer's decimal digits (`String(value)`'s
    /// bytes, without making the string).
    static func combine(_ hash: UInt64, _ value: Int) -> UInt64 {
        var hash = separated(hash)
        if value < 0 { hash = (hash ^ UInt64(UInt8(ascii: "-"))) &* prime }
        let magnitude = value.magnitude
        var divisor: UInt = 1
        while magnitude / divisor >= 10 { divisor *= 10 }
        while divisor > 0 {
            hash = (hash ^ UInt64(UInt8(ascii: "0") + UInt8(magnitude / divisor % 10))) &* prime
            divisor /= 10
        }
        return hash
    }

    private static var prime: UInt64 { 0x0000_0100_0000_01B3 }

    private static func separated(_ hash: UInt64) -> UInt64 { (hash ^ 0x1F) &* prime }
}

extension SeriesKey {
    /// The key's fingerprint (see `Fingerprint`): its fields' text, separated, as
    /// `model`, `String(osMajor)`, `language`, `orientation.rawValue`, `keyboardType`.
    public var fingerprint: UInt64 {
        var hash = Fingerprint.of(model)
        hash = Fingerprint.combine(hash, osMajor)
        hash = Fingerprint.combine(hash, language)
        hash = Fingerprint.combine(hash, orientation.rawValue)
        return Fingerprint.combine(hash, keyboardType)
    }
}
