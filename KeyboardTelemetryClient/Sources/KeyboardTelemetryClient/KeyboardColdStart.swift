/// How long the keyboard takes to show the first time after launch on one model and OS major,
/// measured by kbtd across phones, without and with pre-warming (`cold_start` in
/// `GET /v1/heights` and in `kbtd export`'s table). Each side is nil where kbtd has too few samples.
public struct KeyboardColdStart: Sendable, Equatable, Codable {
    /// The first-show latency of one side, milliseconds.
    public struct Latency: Sendable, Equatable, Codable {
        /// Median.
        public var p50Ms: Double
        /// 90th percentile.
        public var p90Ms: Double
        /// First shows measured.
        public var samples: Int

        /// A latency of `p50Ms` / `p90Ms` milliseconds over `samples` first shows.
        public init(p50Ms: Double, p90Ms: Double, samples: Int) {
            self.p50Ms = p50Ms
            self.p90Ms = p90Ms
            self.samples = samples
        }

        enum CodingKeys: String, CodingKey {
            case p50Ms = "p50_ms", p90Ms = "p90_ms", samples
        }
    }

    /// Apps that did not pre-warm the keyboard.
    public var withoutPrewarm: Latency?
    /// Apps that pre-warmed it at launch.
    public var withPrewarm: Latency?

    /// Both sides, as kbtd reports them.
    public init(withoutPrewarm: Latency?, withPrewarm: Latency?) {
        self.withoutPrewarm = withoutPrewarm
        self.withPrewarm = withPrewarm
    }

    /// Milliseconds pre-warming saves at the median; nil unless both sides are known.
    public var medianSavingMs: Double? {
        guard let without = withoutPrewarm, let with = withPrewarm else { return nil }
        return without.p50Ms - with.p50Ms
    }

    enum CodingKeys: String, CodingKey {
        case withoutPrewarm = "without_prewarm", withPrewarm = "with_prewarm"
    }

    /// Reads `cold_start` where a document may carry it: absent, `null` or not of this shape is nil
    /// (a newer kbtd may add fields; an odd value must not cost the heights beside it).
    static func lenient<Key: CodingKey>(_ container: KeyedDecodingContainer<Key>, _ key: Key) -> KeyboardColdStart? {
        guard let value = try? container.decodeIfPresent(KeyboardColdStart.self, forKey: key),
              value.withoutPrewarm != nil || value.withPrewarm != nil else { return nil }
        return value
    }
}
