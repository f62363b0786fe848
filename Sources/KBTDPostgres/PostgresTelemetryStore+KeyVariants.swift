import KBTDCore
import Logging
import PostgresNIO

/// Writing and reading one kind of key variant (`KeyVariant`: OS releases, reported screens) with
/// its tables' statements (`KeyVariantTables`), as the SQLite store does each kind.
extension PostgresTelemetryStore {
    /// Writes `delta`'s counts and sources of one kind, in the writers' lock order (keys in
    /// `writeOrder`, then variant, then bin or source). Returns the sources stored for the first
    /// time (what the index counts, `CommitPlan.indexDelta`), once each key they name keeps at most
    /// `Key.maxPerKey` variants (a variant new to its key always brings a new source).
    static func writeVariants<Key: KeyVariant>(_ tables: KeyVariantTables<Key>, of delta: AggregateDelta, seenAt: Int64,
                                               connection: PostgresConnection, logger: Logger) async throws -> [Key: Set<SourceID>] {
        let counts = delta[keyPath: Key.bins]
        if !counts.isEmpty {
            let rows = counts.map { (variant: $0.key.variant, halfPoints: $0.key.halfPoints, count: $0.value) }
                .sorted { ($0.variant, $0.halfPoints) < ($1.variant, $1.halfPoints) }
            try await connection.query(tables.upsertCounts(rows), logger: logger)
        }
        var added: [Key: Set<SourceID>] = [:]
        let sources = delta[keyPath: Key.sources]
        guard !sources.isEmpty else { return added }
        var rows: [(variant: Key, source: SourceID)] = []
        for (variant, ids) in sources {
            for id in ids { rows.append((variant, id)) }
        }
        rows.sort { ($0.variant, $0.source) < ($1.variant, $1.source) }
        for try await (m, o, l, r, k, column, source) in try await connection.query(
            tables.insertSources(rows, seenAt: seenAt), logger: logger).decode((String, Int, String, String, String, Key.Column, Int).self) {
            guard let key = series(m, o, l, r, k), let variant = Key(series: key, column: column) else { continue }
            added[variant, default: []].insert(SourceID(UInt64(bitPattern: Int64(source))))
        }
        if !added.isEmpty {
            try await boundVariants(tables, of: Set(added.keys.map(\.series)).sorted(by: SeriesKey.writeOrder),
                                    connection: connection, logger: logger)
        }
        return added
    }

    /// Keeps at most `Key.maxPerKey` variants of each key in `keys`, dropping the weakest ones'
    /// rows by the index's rule (`Key.toDrop`), as the SQLite store does (`boundReleases`, `boundScreens`).
    static func boundVariants<Key: KeyVariant>(_ tables: KeyVariantTables<Key>, of keys: [SeriesKey],
                                               connection: PostgresConnection, logger: Logger) async throws {
        var held: [SeriesKey: [VariantStanding<Key>]] = [:]
        for try await (m, o, l, r, k, column, samples, sources, trusted) in try await connection.query(
            tables.standings(keys), logger: logger).decode((String, Int, String, String, String, Key.Column, Int, Int, Bool?).self) {
            guard let key = series(m, o, l, r, k), let variant = Key(series: key, column: column) else { continue }
            held[key, default: []].append(VariantStanding(variant: variant, support: ReleaseSupport(sources: sources, trusted: trusted ?? false),
                                                          samples: Int64(samples)))
        }
        var dropped: [Key] = []
        for key in held.keys.sorted(by: SeriesKey.writeOrder) { dropped += Key.toDrop(held[key]!).sorted() }
        guard !dropped.isEmpty else { return }
        for table in [tables.counts, tables.sources] {
            try await connection.query(tables.drop(dropped, from: table), logger: logger)
        }
    }

    /// Adds every row of one kind's two tables under the caller's condition (`rows` appends it) to `delta`.
    static func readVariants<Key: KeyVariant>(_ tables: KeyVariantTables<Key>, into delta: inout AggregateDelta,
                                              _ rows: (String) async throws -> PostgresRowSequence) async throws {
        let columns = PostgresSQL.keyColumns
        for try await (m, o, l, r, k, column, bin, samples, votes) in try await rows(
            "SELECT \(columns), \(tables.column), height_bin, samples, votes FROM \(tables.counts)")
            .decode((String, Int, String, String, String, Key.Column, Double, Int, Int).self) {
            guard let key = series(m, o, l, r, k), let variant = Key(series: key, column: column) else { continue }
            delta[keyPath: Key.bins][Key.Bin(variant, halfPoints: HeightBin.halfPoints(bin)), default: .zero]
                += ReleaseCount(samples: Int64(samples), votes: Int64(votes))
        }
        for try await (m, o, l, r, k, column, source) in try await rows("SELECT \(columns), \(tables.column), source FROM \(tables.sources)")
            .decode((String, Int, String, String, String, Key.Column, Int).self) {
            guard let key = series(m, o, l, r, k), let variant = Key(series: key, column: column) else { continue }
            delta[keyPath: Key.sources][variant, default: []].insert(SourceID(UInt64(bitPattern: Int64(source))))
        }
    }
}
