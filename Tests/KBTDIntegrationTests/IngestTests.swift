import Foundation
import KBTDCompression
import KBTDCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("Ingest, answered in-process and by the live daemon", .ownThreads, .timeLimit(.minutes(10)))
struct IngestTests {
    @Test(arguments: [("gzip", Deflater.Format.gzip), ("deflate", .zlib), ("deflate", .raw)])
    func compressedBatchRoundTripsToStatsAndHeight(encoding: String, format: Deflater.Format) async throws {
        let daemon = try InProcessApp()
        let samples = shows(25, height: 392, language: "ja-JP").map { sample -> TestSample in
            var sample = sample
            sample.accessoryHeight = 48
            sample.safeAreaBottom = 34
            return sample
        }
        let body = batchBody(samples: samples)
        let response = try await daemon.post(Deflater.compress(body, format: format), encoding: encoding)
        #expect(response.status == 202, "\(response.text)")
        #expect(response.json?["accepted"] == .number(25))
        #expect(response.json?["rejected"] == .number(0))
        #expect(response.json?["errors"] == .array([]))

        let height = try await daemon.get("/v1/height?model=iPhone17,1&language=ja-JP&os=26.1")
        #expect(height.status == 200)
        #expect(height.json?["height"] == .number(344))
        #expect(height.json?["safe_area_bottom"] == .number(34))
        #expect(height.json?["basis"] == .string("model+os+language"))
        #expect(height.json?["samples"] == .number(25))

        let row = statsRow(try daemon.stats(), model: "iPhone17,1", language: "ja-JP")
        #expect(row?["samples"] == .number(25))
        #expect(row?["height_mode"] == .number(344))
    }

    @Test func identityBodyAndEmptyContentEncodingAreJSON() async throws {
        let daemon = try InProcessApp()
        #expect(try await daemon.post(batchBody(samples: shows(1, height: 336))).status == 202)
        #expect(try await daemon.post(batchBody(samples: shows(1, height: 336)), encoding: "").status == 202)
        #expect(try await daemon.post(batchBody(samples: shows(1, height: 336)), contentType: nil).status == 202)
        #expect(try await daemon.post(batchBody(samples: shows(1, height: 336)), contentType: "application/json; charset=utf-8").status == 202)
    }

    @Test func partialSuccessReportsEachRejectedSample() async throws {
        let daemon = try InProcessApp()
        var bad = TestSample()
        bad.curve = 16
        var old = TestSample()
        old.t -= 40 * 86_400
        let response = try await daemon.post(gzip(batchBody(samples: [TestSample(), bad, TestSample(), old])), encoding: "gzip")
        #expect(response.status == 202)
        #expect(response.json?["accepted"] == .number(2))
        #expect(response.json?["rejected"] == .number(2))
        let errors = response.json?["errors"]?.array ?? []
        #expect(errors.count == 2)
        #expect(errors.first?["index"] == .number(1) && errors.first?["field"] == .string("curve"))
        #expect(errors.last?["index"] == .number(3) && errors.last?["field"] == .string("t"))
    }

    @Test func receiptListsAtMostTwentyErrors() async throws {
        let daemon = try InProcessApp()
        var bad = TestSample()
        bad.event = "appear"
        let response = try await daemon.post(gzip(batchBody(samples: Array(repeating: bad, count: 30))), encoding: "gzip")
        #expect(response.status == 202)
        #expect(response.json?["rejected"] == .number(30))
        #expect(response.json?["errors"]?.array?.count == 20)
    }

    @Test func duplicateBatchIsCountedOnceAlsoAfterRestart() throws {
        let daemon = try TestDaemon().start()
        let id = UUID().uuidString
        let body = gzip(batchBody(id: id, samples: shows(3, height: 336)))
        #expect(try daemon.post(body, encoding: "gzip").status == 202)
        let retry = try daemon.post(body, encoding: "gzip")
        #expect(retry.status == 200)
        #expect(retry.json?["duplicate"] == .bool(true))
        #expect(retry.json?["accepted"] == .number(0))
        #expect(retry.json?["batch_id"] == .string(id.lowercased()))

        #expect(daemon.stop() == 0)
        try daemon.start()
        // Same id in another case and another encoding is still the same batch.
        let again = try daemon.post(Deflater.compress(batchBody(id: id.lowercased(), samples: shows(3, height: 336)), format: .zlib),
                                    encoding: "deflate")
        #expect(again.status == 200)
        #expect(statsRow(try daemon.stats(), model: "iPhone17,1", language: "en-US")?["samples"] == .number(3))
    }

    @Test func concurrentDuplicatesInOneGroupCommitCountOnce() async throws {
        let daemon = try InProcessApp()
        let body = gzip(batchBody(samples: shows(2, height: 336)))
        let statuses = await withTaskGroup(of: Int.self) { group in
            for _ in 0..<16 { group.addTask { (try? await daemon.post(body, encoding: "gzip").status) ?? -1 } }
            return await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.filter { $0 == 202 }.count == 1)
        #expect(statuses.filter { $0 == 200 }.count == 15)
        #expect(statsRow(try daemon.stats(), model: "iPhone17,1", language: "en-US")?["samples"] == .number(2))
    }

    @Test func killNineUnderLoadLosesNothingAcknowledged() throws {
        let daemon = try TestDaemon().start()
        let bodies = (0..<400).map { _ in gzip(batchBody(samples: shows(10, height: 336))) }
        let acknowledged = ConcurrentResults<Int>()
        let next = ConcurrentResults<Int>()
        // kill -9 once 20 batches are acknowledged: mid-load by construction, not by a guessed delay.
        acknowledged.onCount(20) { daemon.signal(SIGKILL) }
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for i in stride(from: worker, to: bodies.count, by: 8) {
                next.append(i)
                guard let response = try? daemon.post(bodies[i], encoding: "gzip") else { return }
                if response.status == 202 { acknowledged.append(i) }
            }
        }
        daemon.signal(SIGKILL)  // when fewer than 20 were acknowledged (the expectation below then fails)
        #expect(daemon.waitForExit() == SIGKILL)
        try daemon.start()
        let acked = Set(acknowledged.values)
        #expect(!acked.isEmpty && acked.count < bodies.count, "the kill should land mid-load (acked \(acked.count))")
        // Every acknowledged batch is stored: its retry is a duplicate.
        for i in acked {
            #expect(try daemon.post(bodies[i], encoding: "gzip").status == 200)
        }
        // Re-send everything else, as a phone would; nothing may count twice.
        for i in 0..<bodies.count where !acked.contains(i) {
            let status = try daemon.post(bodies[i], encoding: "gzip").status
            #expect(status == 202 || status == 200)
        }
        #expect(statsRow(try daemon.stats(), model: "iPhone17,1", language: "en-US")?["samples"] == .number(4000))
    }

    @Test func restartKeepsEveryAggregate() throws {
        let daemon = try TestDaemon().start()
        var samples: [TestSample] = []
        for i in 0..<60 {
            var sample = TestSample(language: ["en-US", "ja-JP", "emoji"][i % 3], height: [336, 344, 336][i % 3])
            sample.coldStartMs = Double(200 + i * 13)
            sample.preloaded = i % 2 == 0
            sample.duration = i % 5 == 0 ? 0 : 0.25
            samples.append(sample)
        }
        samples.append(TestSample(event: "hide", height: 336))
        samples.append(TestSample(height: 55, hardwareKeyboard: true))
        #expect(try daemon.post(gzip(batchBody(samples: samples)), encoding: "gzip").status == 202)
        let before = try daemon.stats()
        let heightBefore = try daemon.get("/v1/heights?model=iPhone17,1").text
        #expect(daemon.stop() == 0)
        try daemon.start()
        #expect(try daemon.stats() == before)
        #expect(try daemon.get("/v1/heights?model=iPhone17,1").text == heightBefore)
        #expect(before["samples"] == .number(62))
    }

    @Test func unixSocketServesTheSameAPI() throws {
        let daemon = try TestDaemon().start()
        let connection = try HTTPTestConnection(.unix(path: daemon.unixSocket))
        let response = try connection.request("POST", "/v1/batches", headers: [("Content-Encoding", "gzip")],
                                              body: gzip(batchBody(samples: shows(20, height: 336))))
        #expect(response.status == 202)
        // Keep-alive: a second request on the same connection.
        let height = try connection.request("GET", "/v1/height?model=iPhone17,1&language=en-US&os=26.1")
        #expect(height.json?["basis"] == .string("model+os+language"))
        let stats = try connection.request("GET", "/v1/stats")
        #expect(stats.status == 200)
        #expect(stats.json?["samples"] == .number(20))
    }
}
