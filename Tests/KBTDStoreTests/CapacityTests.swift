import Foundation
@testable import KBTDCore
import KBTDStore
import Testing

/// Many addresses together must not keep the index or the
/// key store for good. Loopback is a stranger here (`trusted_peers = unix`,
/// rate limits on); in-process requests may come from any address, so each
/// network group (/16, /48) is played by its own address range. Small caps
/// keep the floods short.
@Suite("Capacity that attackers cannot keep")
struct CapacityTests {
    static let strangers = ["KBTD_TRUSTED_PEERS": "unix", "KBTD_RATE_LIMIT_LOCAL_PEERS": "true"]

    static func post(_ app: InProcessApp, from source: String, model: String, samples: [TestSample]) async throws -> HTTPTestResponse {
        try await app.request(.post, "/v1/batches", headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")],
                              body: gzip(batchBody(model: model, samples: samples)), from: source)
    }

    static func accepted(_ response: HTTPTestResponse) -> Int { Int(response.json?["accepted"]?.double ?? 0) }

    // MARK: the index

    /// 3 networks confirm 60 junk keys, filling a 50-key index. A real model
    /// that 10 networks report, and one only the trusted socket reports, each
    /// take a junk key's place and answer; before, both answered `default`
    /// until a restart (and after it too: the junk was loaded first).
    @Test func keysWithMoreSupportDisplaceJunkFromAFullIndex() async throws {
        let environment = Self.strangers.merging(["KBTD_MAX_INDEXED_KEYS": "50"]) { $1 }
        let database = TestPaths.temporaryDirectory().appendingPathComponent("kbtd.sqlite").path
        do {
            let app = try InProcessApp(environment: environment, database: database)
            let junk = (0..<60).map { TestSample(language: "zz-\($0)", height: 999) }
            for source in ["127.0.0.2", "127.0.0.3", "127.0.0.4"] {
                #expect(Self.accepted(try await Self.post(app, from: source, model: "Junk1,1", samples: junk)) == 60)
            }
            #expect(try await app.metric("kbtd_index_keys") == 50, "the junk fills the index")
            let before = try await app.get("/v1/height?model=iPhone18,1&language=en-US&os=26.1").json
            #expect(before?["basis"] == .string("default"))

            // A real new model reported by 10 networks, none trusted.
            for network in 1...10 {
                #expect(try await Self.post(app, from: "10.\(network).0.1", model: "iPhone18,1", samples: shows(5, height: 336)).status == 202)
            }
            // Another one only the trusted Unix socket reports.
            #expect(try await Self.post(app, from: "unix", model: "iPhone18,2", samples: shows(30, height: 352)).status == 202)

            let networks = try #require(try await app.get("/v1/height?model=iPhone18,1&language=en-US&os=26.1").json)
            #expect(networks["height"] == .number(336) && networks["basis"] != .string("default"), "\(networks)")
            let trusted = try #require(try await app.get("/v1/height?model=iPhone18,2&language=en-US&os=26.1").json)
            #expect(trusted["height"] == .number(352) && trusted["basis"] != .string("default"), "\(trusted)")
            #expect(try await app.metric("kbtd_index_keys") == 50, "displaced, not added")

            // The junk cannot take the places back: it has less support than both.
            for source in ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"] {
                _ = try await Self.post(app, from: source, model: "Junk1,1", samples: junk)
            }
            #expect(try await app.get("/v1/height?model=iPhone18,1&language=en-US&os=26.1").json?["height"] == .number(336))
            #expect(try await app.get("/v1/height?model=iPhone18,2&language=en-US&os=26.1").json?["height"] == .number(352))

            // After a restart the index is what the store marks admitted: the same answers.
            await app.app.shutdown()
        }
        let again = try await InProcessApp.reopened(environment: environment, database: database)
        #expect(try await again.metric("kbtd_index_keys") == 50)
        #expect(try await again.get("/v1/height?model=iPhone18,1&language=en-US&os=26.1").json?["height"] == .number(336))
        #expect(try await again.get("/v1/height?model=iPhone18,2&language=en-US&os=26.1").json?["height"] == .number(352))
    }

    /// Removing keys leaves the index a fresh load of the remaining keys builds.
    @Test func removingKeysRebuildsTheLevelsTheyFed() {
        func delta(_ model: String, _ language: String, os: Int, height: Double, count: Int = 3) -> AggregateDelta {
            var delta = AggregateDelta()
            let device = Device(model: model, os: "\(os).1", osMajor: os)
            for _ in 0..<count {
                delta.add(Sample(t: 0, event: .show, language: language, orientation: .portrait, height: height,
                                 duration: 0.25, curve: 7, coldStartMs: nil), device: device)
            }
            return delta
        }
        let parts = [delta("A", "en", os: 26, height: 336), delta("A", "en", os: 18, height: 340), delta("A", "de", os: 26, height: 344),
                     delta("B", "fr", os: 17, height: 350), delta("A", "en", os: 26, height: 352, count: 1)]
        var index = HeightIndex()
        for part in parts { index.apply(part) }
        index.remove([SeriesKey(model: "A", osMajor: 18, language: "en", orientation: .portrait, keyboardType: "default"),
                      SeriesKey(model: "B", osMajor: 17, language: "fr", orientation: .portrait, keyboardType: "default")])
        var fresh = HeightIndex()
        var kept = AggregateDelta()
        for part in [parts[0], parts[2], parts[4]] { kept.merge(part) }
        fresh.apply(kept)
        #expect(index.bySeries.count == fresh.bySeries.count && index.bySeries.count == 2)
        for key in fresh.bySeries.keys { #expect(index.bySeries[key] == fresh.bySeries[key]) }
        for key in fresh.byModelLanguage.keys { #expect(index.byModelLanguage[key] == fresh.byModelLanguage[key]) }
        #expect(index.byModelLanguage.count == fresh.byModelLanguage.count)
        let model = ModelKey(model: "A", orientation: .portrait, keyboardType: "default")
        #expect(index.byModel[model] == fresh.byModel[model])
        #expect(index.byModel[ModelKey(model: "B", orientation: .portrait, keyboardType: "default")] == nil)
        #expect(index.modelsByLanguage == fresh.modelsByLanguage)
        #expect(index.osMajors == fresh.osMajors)
        #expect(index.keysByModel["B"] == nil)
    }

    /// Keys without trusted data that nobody reports age out; reported and trusted ones stay.
    @Test func idleUntrustedKeysAgeOut() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SQLiteTelemetryStore(path: directory.appendingPathComponent("kbtd.sqlite").path)
        let day: Int64 = 86_400
        var junk: [PendingBatch] = []
        for network in 1...3 {
            junk.append(pendingBatch("junk-\(network)", receivedAt: 100 * day, model: "Junk1,1", source: SourceID(network: "10.\(network).0.1")))
        }
        #expect(try store.commit(junk).admitted == 1, "confirmed by 3 networks")
        let alive = pendingBatch("alive-1", receivedAt: 100 * day, model: "Alive1,1", source: SourceID(network: "10.9.0.1"))
        _ = try store.commit([alive, pendingBatch("trusted-1", receivedAt: 100 * day, model: "Trusted1,1")])
        // 40 days later only Alive is reported again.
        let again = pendingBatch("alive-2", receivedAt: 140 * day, model: "Alive1,1", source: SourceID(network: "10.9.0.2"))
        _ = try store.commit([again])
        let gone = try store.pruneIdleKeys(lastSeenBefore: 130 * day, limit: 100)
        #expect(Set(gone.map(\.model)) == ["Junk1,1"], "\(gone)")
        var models: Set<String> = []
        try store.forEachKey { models.insert($0.model) }
        #expect(models == ["Alive1,1", "Trusted1,1"])
        #expect(try store.loadIndexCounts().seriesKeys.allSatisfy { $0.model != "Junk1,1" })
    }

    // MARK: max_keys

    /// Untrusted networks fill their 80% of max_keys (160 of 200); trusted
    /// peers still create keys, also after a restart; a key networks in 3
    /// groups ask for gets into the reserve, one 3 networks of one /16 ask for
    /// does not. Before, the untrusted filled all 200 and every new key was
    /// refused for everyone, restart or not.
    @Test func untrustedNetworksFillOnlyTheirShareOfMaxKeys() async throws {
        let environment = Self.strangers.merging(["KBTD_MAX_KEYS": "200"]) { $1 }
        let database = TestPaths.temporaryDirectory().appendingPathComponent("kbtd.sqlite").path
        var app: InProcessApp? = try InProcessApp(environment: environment, database: database)
        var stored = 0
        for group in 1...3 {
            for model in 0..<2 {
                let samples = (0..<100).map { TestSample(language: "j\(group)-\($0)", height: 300) }
                let response = try await Self.post(app!, from: "10.\(group).0.\(model + 1)", model: "Junk\(group),\(model)", samples: samples)
                stored += Self.accepted(response)
            }
        }
        #expect(stored == 160, "untrusted networks fill untrusted_key_share (80%) of max_keys: \(stored)")
        let refused = try await Self.post(app!, from: "10.7.0.1", model: "iPhone18,1", samples: shows(2, height: 336))
        #expect(Self.accepted(refused) == 0)
        #expect(refused.json?["errors"]?.array?.first?["reason"]?.string?.contains("untrusted_key_share") == true)

        // The trusted socket still creates keys.
        let trusted = try await Self.post(app!, from: "unix", model: "iPhone18,2", samples: (0..<5).map {
            TestSample(language: "t\($0)", height: 352)
        })
        #expect(Self.accepted(trusted) == 5)

        // A key asked for by networks in three groups enters the reserve with the third ask.
        #expect(Self.accepted(try await Self.post(app!, from: "10.8.0.1", model: "iPhone18,1", samples: shows(2, height: 336))) == 0)
        #expect(Self.accepted(try await Self.post(app!, from: "10.9.0.1", model: "iPhone18,1", samples: shows(2, height: 336))) == 2)
        // Three networks of one /16 are one group: not enough.
        for host in 1...3 {
            #expect(Self.accepted(try await Self.post(app!, from: "10.20.0.\(host)", model: "iPhone18,3", samples: shows(2, height: 336))) == 0)
        }

        // After a restart, the untrusted share is still full and trusted peers still create keys.
        await app!.app.shutdown()
        app = nil
        let again = try await InProcessApp.reopened(environment: environment, database: database)
        let stranger = try await Self.post(again, from: "10.30.0.1", model: "iPhone18,4", samples: shows(2, height: 336))
        #expect(Self.accepted(stranger) == 0)
        let operatorKeys = try await Self.post(again, from: "unix", model: "iPhone18,5", samples: (0..<5).map {
            TestSample(language: "u\($0)", height: 352)
        })
        #expect(Self.accepted(operatorKeys) == 5)
        #expect(try await again.metric("kbtd_stored_keys") == 171)
    }

    /// The untrusted networks of one IPv4 /16, or one IPv6 /48, share one daily budget of new keys.
    @Test func aNetworkGroupSharesOneDailyBudgetOfNewKeys() async throws {
        let app = try InProcessApp(environment: Self.strangers.merging(["KBTD_MAX_NEW_KEYS_PER_GROUP_PER_DAY": "50"]) { $1 })
        var stored = 0
        for host in 1...5 {
            let samples = (0..<30).map { TestSample(language: "g\(host)-\($0)", height: 300) }
            stored += Self.accepted(try await Self.post(app, from: "10.44.\(host).1", model: "Junk1,1", samples: samples))
        }
        #expect(stored == 50, "five /32s of one /16: \(stored)")
        var six = 0
        for subnet in 1...3 {
            let samples = (0..<30).map { TestSample(language: "v\(subnet)-\($0)", height: 300) }
            six += Self.accepted(try await Self.post(app, from: "2001:db8:1:\(subnet)::1", model: "Junk2,1", samples: samples))
        }
        #expect(six == 50, "three /64s of one /48: \(six)")
        let other = try await Self.post(app, from: "10.45.0.1", model: "Junk3,1", samples: (0..<30).map { TestSample(language: "o\($0)", height: 300) })
        #expect(Self.accepted(other) == 30, "another /16 has its own budget")
        let refusal = try await Self.post(app, from: "10.44.9.1", model: "Junk4,1", samples: shows(1, height: 300))
        #expect(refusal.json?["errors"]?.array?.first?["reason"]?.string?.contains("max_new_keys_per_group_per_day") == true)
    }
}
