import Foundation
import KBTDCore
import Testing

/// Batches over HTTP/2 keep the exactly-once promise HTTP/1.1 keeps: the same `batch_id` sent
/// several times at once, as streams of one connection, is stored once and answered as a
/// duplicate every other time, and a resend over HTTP/1.1 later is a duplicate too.
@Suite("Batches over HTTP/2 against the live daemon", .ownThreads)
struct HTTP2IngestTests {
    @Test func aBatchSentOnSeveralStreamsAtOnceIsStoredOnce() throws {
        let (daemon, pair) = try TLSTests.tlsDaemon()
        defer { #expect(daemon.stop() == 0) }
        let url = "https://127.0.0.1:\(daemon.port)/v1/batches"
        let batches = 8, copies = 3, samples = 20
        var uploads: [(file: String, output: String)] = []
        var outputs: [(batch: Int, file: String)] = []
        var files: [String] = []
        for batch in 0..<batches {
            let file = try TLSTests.batchFile(daemon, samples: shows(samples, height: Double(330 + batch)))
            files.append(file)
            for copy in 0..<copies {
                let output = daemon.directory.appendingPathComponent("answer-\(batch)-\(copy).json").path
                outputs.append((batch, output))
                uploads.append((file, output))
            }
        }
        // The copies of one batch are next to each other in the list: with 24 transfers in flight on
        // one connection, they race as streams of it.
        let configFile = daemon.directory.appendingPathComponent("batches.curl").path
        try CurlUploads.writeConfig(to: configFile, url: url, ca: pair.ca, uploads: uploads,
                                    writeOut: "%{http_code} %{http_version}")
        let run = try curl(["--parallel", "--parallel-max", String(batches * copies), "-K", configFile])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == batches * copies)
        #expect(lines.allSatisfy { $0.hasSuffix(" 2") }, "every batch went over HTTP/2: \(lines)")

        for batch in 0..<batches {
            let answers = try outputs.filter { $0.batch == batch }.map { try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: $0.file)))) }
            let stored = answers.filter { $0["accepted"] == .number(Double(samples)) && $0["duplicate"] != .bool(true) }
            let duplicates = answers.filter { $0["duplicate"] == .bool(true) }
            #expect(stored.count == 1, "batch \(batch) stored \(stored.count) times: \(answers)")
            #expect(duplicates.count == copies - 1, "batch \(batch): \(answers)")
        }
        #expect(lines.filter { $0.hasPrefix("202 ") }.count == batches, "\(lines)")
        #expect(lines.filter { $0.hasPrefix("200 ") }.count == batches * (copies - 1), "\(lines)")

        // The same batch again over HTTP/1.1: a duplicate, whichever protocol stored it.
        let again = try curl(["--http1.1", "--cacert", pair.ca] + TLSTests.post
            + ["--data-binary", "@" + files[0], "-w", "\n%{http_code}", url])
        #expect(again.stdout.hasSuffix("\n200") && again.stdout.contains("\"duplicate\":true"), "\(again.stdout)")
        let metrics = try curl(["--http2", "--cacert", pair.ca, "https://127.0.0.1:\(daemon.port)/metrics"]).stdout
        #expect(metrics.contains("kbtd_batches_total{outcome=\"stored\"} \(batches)"), "\(metrics)")
        #expect(metrics.contains("kbtd_batches_total{outcome=\"duplicate\"} \(batches * (copies - 1) + 1)"))
        #expect(metrics.contains("kbtd_samples_accepted_total \(batches * samples)"))
    }
}
