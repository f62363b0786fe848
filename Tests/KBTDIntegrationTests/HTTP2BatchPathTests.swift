import Foundation
import KBTDCore
import Testing

/// Batches on h2 streams are read and answered from the frames (`HTTP2FrameFront`), with the
/// router's answers: each case is sent over h2 to `/v1/batches` (the batch path) and over HTTP/1.1
/// (the router's path), and the two answers must have the same
/// status, header fields (but `Date`; h2 names are lower-case) and body.
@Suite("Batches on h2 streams answer as the router does", .ownThreads)
struct HTTP2BatchPathTests {
    struct Answer {
        var status: Int
        var fields: [String]
        var body: String
    }

    /// `curl -i` output: the status line, the header lines, a blank line, the body.
    static func parse(_ output: String) -> Answer {
        let parts = output.components(separatedBy: "\r\n\r\n")
        var lines = parts[0].components(separatedBy: "\r\n")
        let status = Int(lines.removeFirst().split(separator: " ").dropFirst().first ?? "") ?? 0
        let fields = lines.compactMap { line -> String? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let name = line[..<colon].lowercased()
            guard name != "date" else { return nil }
            return "\(name): \(line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))"
        }
        return Answer(status: status, fields: fields, body: parts.dropFirst().joined(separator: "\r\n\r\n"))
    }

    @Test func everyStatusOverH2IsTheRoutersAnswer() throws {
        let (daemon, pair) = try TLSTests.tlsDaemon(environment: [
            "KBTD_INGEST_TOKENS": "secret", "KBTD_MAX_COMPRESSED_BYTES": "300000", "KBTD_MAX_DECOMPRESSED_BYTES": "400000",
        ])
        defer { #expect(daemon.stop() == 0) }
        let base = "https://127.0.0.1:\(daemon.port)/v1/batches"
        func file(_ bytes: [UInt8]) throws -> String {
            let path = daemon.directory.appendingPathComponent("body-\(UUID().uuidString)").path
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            return path
        }
        func send(_ body: String, headers: [String], h2: Bool) throws -> Answer {
            let run = try curl([h2 ? "--http2" : "--http1.1", "--cacert", pair.ca, "-i", "-X", "POST"]
                + headers.flatMap { ["-H", $0] } + ["--data-binary", "@" + body, base])
            #expect(run.status == 0, "\(run.stderr)")
            return Self.parse(run.stdout)
        }
        let auth = "Authorization: Bearer secret", json = "Content-Type: application/json", gzipped = "Content-Encoding: gzip"
        /// Two batches alike but for their ids: the receipts are compared with the ids swapped.
        func twins(_ samples: [TestSample], gzipped: Bool) throws -> (String, String, String, String) {
            let first = UUID().uuidString.lowercased(), second = UUID().uuidString.lowercased()
            let a = batchBody(id: first, samples: samples), b = batchBody(id: second, samples: samples)
            return (try file(gzipped ? gzip(a) : a), try file(gzipped ? gzip(b) : b), first, second)
        }
        var cases = 0
        func compare(_ name: String, h2 body: String, router: String, headers: [String], ids: (String, String)? = nil,
                     status: Int) throws {
            cases += 1
            let fast = try send(body, headers: headers, h2: true)
            let routed = try send(router, headers: headers, h2: false)
            var routedBody = routed.body
            if let (h2ID, routerID) = ids { routedBody = routedBody.replacingOccurrences(of: routerID, with: h2ID) }
            #expect(fast.status == status, "\(name): \(fast.body)")
            #expect(fast.status == routed.status, "\(name)")
            #expect(fast.fields == routed.fields, "\(name)")
            #expect(fast.body == routedBody, "\(name)")
        }
        let small = try twins(shows(20, height: 336), gzipped: true)
        try compare("202", h2: small.0, router: small.1, headers: [auth, json, gzipped], ids: (small.2, small.3), status: 202)
        try compare("200 duplicate", h2: small.0, router: small.0, headers: [auth, json, gzipped], status: 200)
        // Larger than the stream's initial window (65,535 bytes): the path must open it as it reads.
        let large = try twins(shows(900, height: 336), gzipped: false)
        let largeSize = try FileManager.default.attributesOfItem(atPath: large.0)[.size] as? Int ?? 0
        #expect(largeSize > 100_000 && largeSize < 300_000, "\(largeSize) bytes")
        try compare("202 over several windows", h2: large.0, router: large.1, headers: [auth, json], ids: (large.2, large.3), status: 202)
        let broken = try file(Array("{\"batch_id\": ".utf8))
        try compare("400", h2: broken, router: broken, headers: [auth, json], status: 400)
        let notGzip = try file(Array("not gzip".utf8))
        try compare("400 compressed stream", h2: notGzip, router: notGzip, headers: [auth, json, gzipped], status: 400)
        try compare("415", h2: broken, router: broken, headers: [auth, "Content-Type: text/plain"], status: 415)
        let huge = try file(Array(repeating: 32, count: 310_000))
        try compare("413 declared", h2: huge, router: huge, headers: [auth, json], status: 413)
        let bomb = try file(gzip(Array(repeating: 32, count: 500_000)))
        try compare("413 decompressed", h2: bomb, router: bomb, headers: [auth, json, gzipped], status: 413)
        try compare("401", h2: small.0, router: small.0, headers: [json, gzipped], status: 401)

        let metrics = try curl(["--http1.1", "--cacert", pair.ca, "https://127.0.0.1:\(daemon.port)/metrics"]).stdout
        #expect(metrics.contains("kbtd_fast_batches_total{protocol=\"h2\"} \(cases)\n"), "every h2 batch on the batch path: \(metrics)")
        #expect(!metrics.contains("kbtd_fast_batches_total{protocol=\"http/1.1\"}"), "HTTP/1.1 has no batch path: its batches went to the router")
        #expect(metrics.contains("kbtd_http_requests_total{route=\"/v1/batches\",status=\"413\"} 4"))
    }
}
