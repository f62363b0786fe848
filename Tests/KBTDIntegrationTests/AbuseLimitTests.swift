import Foundation
import KBTDCompression
import KBTDCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Peak resident memory of a process (VmHWM), in MiB.
func peakRSSMiB(_ pid: Int32) -> Double? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
          let kib = Double(line.split(separator: " ").dropFirst().first ?? "") else { return nil }
    return kib / 1024
}

@Suite("Abuse limits against the live daemon", .ownThreads, .timeLimit(.minutes(10)))
struct AbuseLimitTests {
    @Test func ingestTokensAreRequiredWhenConfigured() async throws {
        let daemon = try InProcessApp(environment: ["KBTD_INGEST_TOKENS": "first-secret, second-secret"])
        let body = gzip(batchBody(samples: shows(2, height: 336)))
        let missing = try await daemon.post(body, encoding: "gzip")
        #expect(missing.status == 401)
        #expect(missing.json?["field"] == .string("Authorization"))
        #expect(missing.header("www-authenticate") == "Bearer")
        #expect(try await daemon.post(body, encoding: "gzip", headers: [("Authorization", "Bearer first-secre")]).status == 401)
        #expect(try await daemon.post(body, encoding: "gzip", headers: [("Authorization", "Basic second-secret")]).status == 401)
        #expect(try daemon.stats()["samples"] == .number(0))
        #expect(try await daemon.post(body, encoding: "gzip", headers: [("Authorization", "Bearer second-secret")]).status == 202)
        #expect(try await daemon.post(gzip(batchBody(samples: shows(1, height: 336))), encoding: "gzip",
                                headers: [("Authorization", "Bearer first-secret")]).status == 202)
        #expect(try daemon.stats()["samples"] == .number(3))
        // Reads stay open to phones.
        #expect(try await daemon.get("/v1/height?model=iPhone17,1&language=en-US").status == 200)
    }

    @Test func tokenBucketPerAddressAnswers429WithRetryAfter() async throws {
        // One token per 1,000 s: five posts never earn a fourth, however long the test waits for a thread
        // (in-process tests share the 2-thread cooperative pool with blocking live-daemon tests).
        let daemon = try InProcessApp(environment: [
            "KBTD_RATE_LIMIT_PER_SECOND": "0.001", "KBTD_RATE_LIMIT_BURST": "3", "KBTD_RATE_LIMIT_LOCAL_PEERS": "true",
        ])
        var statuses: [HTTPTestResponse] = []
        for _ in 0..<5 { statuses.append(try await daemon.post(gzip(batchBody(samples: shows(1, height: 336))), encoding: "gzip")) }
        #expect(statuses.map(\.status) == [202, 202, 202, 429, 429])
        let limited = statuses[3]
        #expect(Int(limited.header("retry-after") ?? "") ?? 0 >= 1)
        #expect(limited.json?["error"] == .string("rate limited"))
        #expect(try daemon.stats()["samples"] == .number(3))
    }

    @Test func localPeersAreExemptByDefault() async throws {
        let daemon = try InProcessApp(environment: ["KBTD_RATE_LIMIT_PER_SECOND": "0.5", "KBTD_RATE_LIMIT_BURST": "1"])
        for _ in 0..<5 {
            #expect(try await daemon.post(gzip(batchBody(samples: shows(1, height: 336))), encoding: "gzip").status == 202)
        }
    }

    @Test func connectionCapClosesExtraConnections() throws {
        let daemon = try TestDaemon(environment: ["KBTD_MAX_CONNECTIONS": "3"]).start()
        let held = try (0..<3).map { _ in try daemon.connection() }
        for connection in held { #expect(try connection.request("GET", "/healthz").status == 200) }
        let extra = try daemon.connection()
        #expect(extra.isClosedByPeer(within: 60))
        // Closing one makes room again.
        // Closing one makes room again, once the daemon has seen the close (awaited, not slept on).
        held.first?.shutdownBothWays()
        #expect(throws: Never.self, "no room after a held connection closed") {
            try daemon.until("a new connection to be served after a held one closed") { (try? daemon.get("/healthz").status) == 200 }
        }
    }

    @Test func slowHeadersSlowBodiesAndIdleConnectionsAreClosed() throws {
        let daemon = try TestDaemon(environment: [
            "KBTD_HEADER_TIMEOUT_SECONDS": "1", "KBTD_BODY_TIMEOUT_SECONDS": "1", "KBTD_IDLE_TIMEOUT_SECONDS": "1",
        ]).start()
        let pid = try #require(daemon.process?.processIdentifier)

        // Headers trickled a byte at a time, 100 connections at once.
        let slowHeaders = try (0..<100).map { _ in try daemon.connection() }
        let head = Array("POST /v1/batches HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n".utf8)
        // Each connection trickles a byte of its head, then waits for its close (100 ms at most, the
        // trickle's rate), until the daemon has closed it: trickling does not keep a head open. Bounded.
        let trickle = Deadline(60, for: "the daemon to close 100 connections trickling their heads")
        var open = slowHeaders.indices.map { _ in true }, index = 0
        while open.contains(true), !trickle.hasPassed {
            for (i, connection) in slowHeaders.enumerated() where open[i] { try? connection.send([head[index % head.count]]) }
            index += 1
            for (i, connection) in slowHeaders.enumerated() where open[i] {
                // The first open connection waits up to 100 ms (the trickle's rate); the others are only checked.
                let first = i == slowHeaders.indices.first(where: { open[$0] })
                if connection.isClosedByPeer(until: trickle, cap: first ? 100 : 0) { open[i] = false }
            }
        }
        #expect(!open.contains(true), "\(open.filter { $0 }.count) trickling connections still open: \(trickle.failure())")

        // A complete head, then the body trickled.
        let slowBody = try daemon.connection()
        try slowBody.send(Array("POST /v1/batches HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n".utf8))
        let bodyTrickle = Deadline(60, for: "the daemon to close a connection trickling its body")
        var closed = false
        while !closed, !bodyTrickle.hasPassed {
            try? slowBody.send([0x20])
            closed = slowBody.isClosedByPeer(until: bodyTrickle, cap: 100)
        }
        #expect(closed, "\(bodyTrickle.failure())")

        // An idle keep-alive connection.
        let idle = try daemon.connection()
        #expect(try idle.request("GET", "/healthz").status == 200)
        #expect(idle.isClosedByPeer(within: 60))

        #expect(try daemon.get("/healthz").status == 200)
        // A figure, not a pass/fail: memory depends on the machine (Benchmarks/run measures it).
        let rss = try #require(peakRSSMiB(pid))
        print("slowloris: peak RSS \(rss) MiB")
    }
}

@Suite("Hostile input against the live daemon", .ownThreads, .timeLimit(.minutes(10)))
struct HostileInputTests {
    func raw(_ daemon: TestDaemon, _ request: String, body: [UInt8] = []) throws -> HTTPTestResponse? {
        let connection = try daemon.connection()
        try connection.send(Array(request.utf8) + body)
        return try? connection.readResponse()
    }

    @Test func malformedFramingIsRejectedAndTheDaemonStaysUp() throws {
        let daemon = try TestDaemon().start()
        #expect(try daemon.post(gzip(batchBody(samples: shows(3, height: 336))), encoding: "gzip").status == 202)
        let before = try daemon.stats()
        let payload = gzip(batchBody(samples: shows(3, height: 336)))
        let framings = [
            "POST /v1/batches HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: \(payload.count)\r\nTransfer-Encoding: chunked\r\n\r\n",
            "POST /v1/batches HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: \(payload.count)\r\nContent-Length: \(payload.count + 1)\r\n\r\n",
            "POST /v1/batches HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            "POST /v1/batches HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
            "GARBAGE\r\n\r\n",
        ]
        for framing in framings {
            let response = try raw(daemon, framing, body: payload)
            // NIO's parser refuses these: a 400, or the connection is closed without an answer.
            if let response { #expect(response.status == 400, "\(framing.debugDescription): \(response.status)") }
        }
        #expect(try daemon.stats() == before)
        #expect(try daemon.get("/healthz").status == 200)
    }

    @Test func hugeAndDeepDocumentsAreRefusedWithBoundedMemory() throws {
        let daemon = try TestDaemon().start()
        let pid = try #require(daemon.process?.processIdentifier)
        #expect(try daemon.post(gzip(batchBody(samples: shows(3, height: 336))), encoding: "gzip").status == 202)
        let before = try daemon.stats()

        // A 10 MB string: over the wire cap raw, over the inflate cap gzipped.
        let big = Array("{\"batch_id\":\"".utf8) + [UInt8](repeating: 0x61, count: 10_000_000) + Array("\"}".utf8)
        #expect(try daemon.post(big).status == 413)
        #expect(try daemon.post(gzip(big), encoding: "gzip").status == 413)
        // 100,000-deep nesting.
        let deep = Array((String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)).utf8)
        let deepResponse = try daemon.post(gzip(deep), encoding: "gzip")
        #expect(deepResponse.status == 400)
        #expect(deepResponse.json?["detail"]?.string?.contains("nesting") == true)
        // Bombs: 1 GiB of zeros in ~1 MiB of gzip would pass the wire cap; the inflate cap stops it.
        let bomb = Deflater.compress([UInt8](repeating: 0, count: 512 << 20), format: .gzip, level: 9)
        #expect(bomb.count < 1 << 20)
        for _ in 0..<4 { #expect(try daemon.post(bomb, encoding: "gzip").status == 413) }
        // More samples than allowed.
        #expect(try daemon.post(gzip(batchBody(samples: shows(10_001, height: 336))), encoding: "gzip").status == 400)

        #expect(try daemon.stats() == before)
        // A figure, not a pass/fail; the inflate cap is asserted above by status (413) and unchanged stats.
        let rss = try #require(peakRSSMiB(pid))
        print("bombs: peak RSS \(rss) MiB (bomb of \(bomb.count) bytes)")
    }

    @Test func concatenatedGzipMembersAreOneBatch() throws {
        let daemon = try TestDaemon().start()
        let body = batchBody(samples: shows(4, height: 336))
        let split = body.count / 2
        let members = gzip(Array(body[..<split])) + gzip(Array(body[split...]))
        let response = try daemon.post(members, encoding: "gzip")
        #expect(response.status == 202)
        #expect(response.json?["accepted"] == .number(4))
    }
}
