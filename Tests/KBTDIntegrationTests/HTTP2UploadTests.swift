import Foundation
import KBTDCore
import Testing

/// Sustained uploads on one h2 connection all get their answer: 2,000 distinct batches,
/// 16 streams in flight, sent by curl (nghttp2). Before `EndStreamCoalescer`, curl reset every stream
/// whose empty END_STREAM frame arrived after the body, swift-nio-http2's rapid-reset budget (200
/// RST_STREAM in 30 s) ran out, and kbtd ended the connection with GOAWAY ENHANCE_YOUR_CALM:
/// curl re-sent the cut streams (answered as duplicates) and kbtd counted the cut bodies as rejected.
@Suite("Sustained batch uploads over one HTTP/2 connection", .ownThreads)
struct HTTP2UploadTests {
    @Test func twoThousandUploadsOnOneConnectionAreEachAnsweredAndStoredOnce() throws {
        let (daemon, pair) = try TLSTests.tlsDaemon()
        defer { #expect(daemon.stop() == 0) }
        let url = "https://127.0.0.1:\(daemon.port)/v1/batches"
        let batches = 2_000, samples = 5
        // A few distinct bodies would do for the transport, but each batch needs its own batch_id.
        var uploads: [(file: String, output: String)] = []
        for batch in 0..<batches {
            let path = daemon.directory.appendingPathComponent("upload-\(batch).json.gz").path
            try Data(gzip(batchBody(samples: shows(samples, height: Double(300 + batch % 50))))).write(to: URL(fileURLWithPath: path))
            uploads.append((path, "/dev/null"))
        }
        let configFile = daemon.directory.appendingPathComponent("uploads.curl").path
        try CurlUploads.writeConfig(to: configFile, url: url, ca: pair.ca, uploads: uploads,
                                    writeOut: "%{http_code} %{http_version} %{num_connects}")
        // A bound, not a speed target: a loaded machine takes well under a minute for this.
        let run = try spawnAndWait("/usr/bin/curl", ["-sS", "--max-time", "120", "--parallel", "--parallel-max", "16",
                                                     "-K", configFile], timeout: 300)
        #expect(run.status == 0, "curl: \(run.stderr.suffix(2_000))")
        let lines = run.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == batches)
        let answered = lines.filter { $0.hasPrefix("202 2 ") }.count
        #expect(answered == batches, "not every upload answered 202 over h2: \(Dictionary(grouping: lines) { $0.prefix(5) }.mapValues(\.count))")
        // curl opens a few connections while it learns the server multiplexes; a connection ended by
        // kbtd would show as transfers that had to connect again after the first ones.
        let reconnected = lines.dropFirst(32).filter { !$0.hasSuffix(" 0") }
        #expect(reconnected.isEmpty, "transfers that needed a new connection: \(reconnected.prefix(10))")

        // Exactly one stored copy of each batch: no stream cut and re-sent (a duplicate), no body cut (rejected).
        let metrics = try curl(["--http1.1", "--cacert", pair.ca, "https://127.0.0.1:\(daemon.port)/metrics"]).stdout
        func counter(_ name: String) -> Int {
            let line = metrics.split(separator: "\n").first { $0.hasPrefix(name + " ") }
            return line.flatMap { Int(Double($0.split(separator: " ").last ?? "") ?? -1) } ?? 0
        }
        #expect(counter("kbtd_batches_total{outcome=\"stored\"}") == batches)
        #expect(counter("kbtd_batches_total{outcome=\"duplicate\"}") == 0, "streams were cut and re-sent")
        #expect(counter("kbtd_batches_total{outcome=\"rejected\"}") == 0, "bodies were cut")
        #expect(counter("kbtd_samples_accepted_total") == batches * samples)
    }
}
