import Foundation

/// What a call to `refreshHeights` did.
public enum HeightsRefreshResult: Sendable, Equatable {
    /// 200: new estimates replaced the cached ones.
    case updated
    /// 304: the cached estimates are still kbtd's answer.
    case notModified
    /// Not due yet (fetched less than `heightsRefreshInterval` ago, or failed less than `heightsRetryInterval` ago).
    case skipped
    /// No usable answer; the cache is unchanged.
    case failed(String)
}

/// Fetches `GET /v1/heights?model=M&os=V` with `If-None-Match`, at most once
/// per refresh interval, one request at a time, into the `HeightCache`.
actor HeightsRefresher {
    private let cache: HeightCache
    private let device: TelemetryDevice
    private let configuration: TelemetryConfiguration
    private let transport: any TelemetryTransport
    private let clock: any TelemetryClock
    private let counters: Locked<TelemetryCounters>
    /// Persists the cache off the caller's thread.
    private let save: @Sendable () -> Void
    private var running: Task<HeightsRefreshResult, Never>?

    init(cache: HeightCache, device: TelemetryDevice, configuration: TelemetryConfiguration,
         transport: any TelemetryTransport, clock: any TelemetryClock, counters: Locked<TelemetryCounters>,
         save: @escaping @Sendable () -> Void) {
        self.cache = cache
        self.device = device
        self.configuration = configuration
        self.transport = transport
        self.clock = clock
        self.counters = counters
        self.save = save
    }

    /// Fetches when due (or always with `force`); joins a fetch already running.
    func refresh(force: Bool) async -> HeightsRefreshResult {
        if let running { return await running.value }
        cache.loadIfNeeded()
        if !force && !isDue() { return .skipped }
        let task = Task { await self.fetch() }
        running = task
        let result = await withTaskCancellationHandler { await task.value } onCancel: { task.cancel() }
        running = nil
        return result
    }

    private func isDue() -> Bool {
        let snapshot = cache.snapshot
        let now = clock.now()
        if let fetched = snapshot.fetchedAt, now.timeIntervalSince(fetched) < configuration.heightsRefreshInterval,
           now >= fetched {
            return false
        }
        if let failed = snapshot.failedAt, now.timeIntervalSince(failed) < configuration.heightsRetryInterval, now >= failed {
            return false
        }
        return true
    }

    private func fetch() async -> HeightsRefreshResult {
        var components = URLComponents(url: configuration.baseURL.appendingPathComponent("v1/heights"),
                                       resolvingAgainstBaseURL: false)
        components?.queryItems = [URLQueryItem(name: "model", value: device.model), URLQueryItem(name: "os", value: device.os)]
            + (device.screen.map { [URLQueryItem(name: "screen", value: $0)] } ?? [])
        guard let url = components?.url else { return fail("cannot build the heights URL") }
        var headers = ["Accept": "application/json", "User-Agent": "KeyboardTelemetryClient/1.0"]
        if let etag = cache.snapshot.etag { headers["If-None-Match"] = etag }
        if let token = configuration.authorizationToken { headers["Authorization"] = "Bearer \(token)" }
        let response: TransportResponse
        do {
            response = try await transport.send(TransportRequest(method: "GET", url: url, headers: headers,
                                                                 timeout: configuration.requestTimeout))
        } catch {
            if Task.isCancelled { return .failed("cancelled") }  // shutting down: not the server's fault
            return fail("\(error)")
        }
        let now = clock.now()
        switch response.status {
        case 200:
            guard let answer = try? JSONDecoder().decode(HeightsAnswer.self, from: response.body) else {
                return fail("unreadable /v1/heights answer")
            }
            cache.update { snapshot in
                snapshot.serverEstimates = Dictionary(answer.estimates.compactMap { estimate in
                    guard let orientation = KeyboardOrientation(rawValue: estimate.orientation),
                          let type = KeyboardType(rawValue: estimate.keyboard_type) else { return nil }
                    return (HeightCache.key(estimate.language, orientation, type),
                            HeightCache.Snapshot.ServerEstimate(height: estimate.height, basis: estimate.basis))
                }, uniquingKeysWith: { first, _ in first })
                snapshot.serverDefaults = answer.default.mapValues {
                    HeightCache.Snapshot.ServerEstimate(height: $0.height, basis: $0.basis)
                }
                snapshot.coldStart = answer.coldStart
                snapshot.etag = response.header("ETag")
                snapshot.fetchedAt = now
                snapshot.failedAt = nil
            }
            counters.withLock { $0.heightsFetched += 1 }
            save()
            return .updated
        case 304:
            cache.update { snapshot in
                snapshot.fetchedAt = now
                snapshot.failedAt = nil
            }
            counters.withLock { $0.heightsNotModified += 1 }
            save()
            return .notModified
        default:
            return fail("HTTP \(response.status)")
        }
    }

    private func fail(_ reason: String) -> HeightsRefreshResult {
        let now = clock.now()
        cache.update { $0.failedAt = now }
        counters.withLock { $0.heightsFailed += 1 }
        configuration.logger.log(.info, "heights refresh failed: \(reason)")
        save()
        return .failed(reason)
    }

    /// The body of `GET /v1/heights` (docs/http-api.md); unknown fields are ignored.
    private struct HeightsAnswer: Decodable {
        struct Estimate: Decodable {
            var language: String
            var orientation: String
            var keyboard_type: String
            var height: Double
            var basis: String
        }

        struct Fallback: Decodable {
            var height: Double
            var basis: String
        }

        var estimates: [Estimate]
        var `default`: [String: Fallback]
        /// Absent when kbtd knows neither side (and from daemons before it answered with it).
        var coldStart: KeyboardColdStart?

        enum CodingKeys: String, CodingKey {
            case estimates, `default`, coldStart = "cold_start"
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            estimates = try container.decode([Estimate].self, forKey: .estimates)
            `default` = try container.decode([String: Fallback].self, forKey: .default)
            coldStart = KeyboardColdStart.lenient(container, .coldStart)
        }
    }
}
