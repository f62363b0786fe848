import Foundation

/// The client's local knowledge of keyboard heights: its own measurements and
/// kbtd's last answer. Reads take a lock for a dictionary lookup and nothing
/// else, so `estimatedHeight` can run on the main thread; network refreshes
/// replace the server part in one step. Persisted as `heights.json`, which is
/// read on the client's own task after `init` (`loadIfNeeded`): until then
/// answers come from this run's measurements, the bundled table and the defaults.
final class HeightCache: Sendable {
    /// What is kept on disk.
    struct Snapshot: Codable, Equatable {
        struct ServerEstimate: Codable, Equatable {
            var height: Double
            var basis: String
        }

        /// The device the snapshot belongs to: a new OS version invalidates it (iOS changes heights between releases).
        var model: String
        var os: String
        /// System height (accessory removed) by `key(language:orientation:keyboardType:)`.
        var measured: [String: Double] = [:]
        var serverEstimates: [String: ServerEstimate] = [:]
        /// kbtd's answer for languages it has no data for, by orientation.
        var serverDefaults: [String: ServerEstimate] = [:]
        var etag: String?
        /// Last 200 or 304 for `GET /v1/heights`.
        var fetchedAt: Date?
        /// Last failed attempt.
        var failedAt: Date?
        /// kbtd's first-show latencies for this model and OS major (`cold_start` in its answer).
        var coldStart: KeyboardColdStart?

        /// Takes what an earlier run stored; what this run already learned wins.
        mutating func adopt(_ stored: Snapshot) {
            measured = stored.measured.merging(measured) { _, learnedNow in learnedNow }
            guard fetchedAt == nil && failedAt == nil else { return }
            serverEstimates = stored.serverEstimates
            serverDefaults = stored.serverDefaults
            etag = stored.etag
            fetchedAt = stored.fetchedAt
            failedAt = stored.failedAt
            coldStart = stored.coldStart
        }
    }

    private let storage: StorageDirectory
    private let file: URL
    private let logger: TelemetryLogger
    private let state: Locked<Snapshot>
    /// Whether `heights.json` has been read; held while it is read, so one caller reads it and others wait.
    private let loaded = Locked(false)

    /// An empty cache for `device`; nothing is read until `loadIfNeeded()`.
    init(storage: StorageDirectory, device: TelemetryDevice, logger: TelemetryLogger) {
        self.storage = storage
        file = storage.appending("heights.json")
        self.logger = logger
        state = Locked(Snapshot(model: device.model, os: device.os))
    }

    /// Reads what an earlier run stored, once (on the client's own tasks; never from `estimate`).
    func loadIfNeeded() {
        loaded.withLock { loaded in
            guard !loaded else { return }
            loaded = true
            guard let data = try? storage.fileSystem.readFile(at: file) else { return }  // a first launch
            guard let stored = try? JSONDecoder().decode(Snapshot.self, from: data) else {
                logger.log(.warning, "ignoring unreadable heights cache \(file.path)")
                return
            }
            state.withLock { snapshot in
                guard stored.model == snapshot.model && stored.os == snapshot.os else {
                    logger.log(.info, "heights cache is for \(stored.model) \(stored.os), not \(snapshot.model) \(snapshot.os): starting over")
                    return
                }
                snapshot.adopt(stored)
            }
        }
    }

    static func key(_ language: String, _ orientation: KeyboardOrientation, _ keyboardType: KeyboardType) -> String {
        "\(language)|\(orientation.rawValue)|\(keyboardType.rawValue)"
    }

    /// Measured, then server, then the bundled table, then the default. kbtd's
    /// answer for an unseen language wins over the table only when it is more
    /// than kbtd's own constant (basis `default`). Never does I/O.
    func estimate(language: String, orientation: KeyboardOrientation, keyboardType: KeyboardType,
                  bundled: Double?, default fallback: Double) -> KeyboardHeightEstimate {
        let key = Self.key(language, orientation, keyboardType)
        return state.withLock { snapshot in
            if let measured = snapshot.measured[key] {
                return KeyboardHeightEstimate(height: measured, source: .measured)
            }
            if let server = snapshot.serverEstimates[key] {
                return KeyboardHeightEstimate(height: server.height, source: .server(basis: server.basis))
            }
            let serverDefault = snapshot.serverDefaults[orientation.rawValue]
            if let serverDefault, serverDefault.basis != "default" {
                return KeyboardHeightEstimate(height: serverDefault.height, source: .server(basis: serverDefault.basis))
            }
            if let bundled {
                return KeyboardHeightEstimate(height: bundled, source: .bundled)
            }
            if let serverDefault {
                return KeyboardHeightEstimate(height: serverDefault.height, source: .server(basis: serverDefault.basis))
            }
            return KeyboardHeightEstimate(height: fallback, source: .configuredDefault)
        }
    }

    /// Learns from a docked show/change; true when the stored value changed (the caller persists it).
    func learn(_ sample: KeyboardSample) -> Bool {
        guard sample.isDockedMeasurement else { return false }
        let key = Self.key(sample.language, sample.orientation, sample.keyboardType)
        let height = sample.systemHeight
        return state.withLock { snapshot in
            guard snapshot.measured[key] != height else { return false }
            snapshot.measured[key] = height
            return true
        }
    }

    var snapshot: Snapshot { state.withLock { $0 } }

    var coldStart: KeyboardColdStart? { state.withLock { $0.coldStart } }

    func update(_ body: (inout Snapshot) -> Void) {
        state.withLock(body)
    }

    /// Writes the current snapshot (temp file + rename), after reading the stored one so nothing is
    /// lost. Called from one task at a time.
    func save() throws {
        loadIfNeeded()
        try storage.prepare()
        let data = try JSONEncoder().encode(snapshot)
        let temporary = storage.appending(".tmp-heights.json")
        try storage.fileSystem.writeFile(data, to: temporary, durable: false)
        try storage.fileSystem.moveItem(at: temporary, to: file)
    }
}
