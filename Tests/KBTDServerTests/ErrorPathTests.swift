import Foundation
import KBTDCompression
import KBTDCore
import Testing

/// Every 4xx of docs/http-api.md that this build can produce, each checked for
/// its status, an error body naming the problem, and no change to what was stored.
@Suite("Error paths, answered in-process", .ownThreads, .timeLimit(.minutes(10)))
struct ErrorPathTests {
    static let payload = batchBody(samples: shows(5, height: 336))

    static let cases: [(name: String, status: Int, detail: String, body: [UInt8], headers: [(String, String)])] = {
        let gz = gzip(payload)
        let zlib = Deflater.compress(payload, format: .zlib)
        func batch(_ document: String) -> [UInt8] { gzip(Array(document.utf8)) }
        let now = Date().timeIntervalSince1970
        let sample = "{\"t\":\(now),\"event\":\"show\",\"language\":\"en-US\",\"orientation\":\"portrait\",\"height\":336,\"duration\":0.25,\"curve\":7}"
        let id = "\"batch_id\":\"\(UUID().uuidString)\""
        let device = "\"device\":{\"model\":\"iPhone17,1\",\"os\":\"26.1\"}"
        return [
            ("not JSON", 400, "not valid JSON", gzip(Array("hello".utf8)), [("Content-Encoding", "gzip")]),
            ("JSON array", 400, "must be a JSON object", batch("[]"), [("Content-Encoding", "gzip")]),
            ("NaN", 400, "not valid JSON", batch("{\(id),\(device),\"samples\":[NaN]}"), [("Content-Encoding", "gzip")]),
            ("1e400", 400, "number out of range", batch("{\(id),\(device),\"samples\":[{\"t\":1e400}]}"), [("Content-Encoding", "gzip")]),
            ("duplicate key", 400, "duplicate key", batch("{\(id),\(id),\(device),\"samples\":[\(sample)]}"), [("Content-Encoding", "gzip")]),
            ("missing batch_id", 400, "batch_id", batch("{\(device),\"samples\":[\(sample)]}"), [("Content-Encoding", "gzip")]),
            ("bad batch_id", 400, "batch_id", batch("{\"batch_id\":\"123\",\(device),\"samples\":[\(sample)]}"), [("Content-Encoding", "gzip")]),
            ("missing device", 400, "device", batch("{\(id),\"samples\":[\(sample)]}"), [("Content-Encoding", "gzip")]),
            ("bad model", 400, "device.model", batch("{\(id),\"device\":{\"model\":\"iPhone 17\",\"os\":\"26.1\"},\"samples\":[\(sample)]}"), [("Content-Encoding", "gzip")]),
            ("bad os", 400, "device.os", batch("{\(id),\"device\":{\"model\":\"iPhone17,1\",\"os\":\"26.x\"},\"samples\":[\(sample)]}"), [("Content-Encoding", "gzip")]),
            ("long app", 400, "device.app", batch("{\(id),\"device\":{\"model\":\"iPhone17,1\",\"os\":\"26.1\",\"app\":\"\(String(repeating: "a", count: 129))\"},\"samples\":[\(sample)]}"), [("Content-Encoding", "gzip")]),
            ("no samples", 400, "samples", batch("{\(id),\(device),\"samples\":[]}"), [("Content-Encoding", "gzip")]),
            ("samples not array", 400, "samples", batch("{\(id),\(device),\"samples\":{}}"), [("Content-Encoding", "gzip")]),
            ("too many samples", 400, "1 to 10000", batch("{\(id),\(device),\"samples\":[\(Array(repeating: sample, count: 10_001).joined(separator: ","))]}"), [("Content-Encoding", "gzip")]),
            ("truncated gzip", 400, "truncated", Array(gz.dropLast(6)), [("Content-Encoding", "gzip")]),
            ("gzip trailing garbage", 400, "after the end", gz + Array("junk".utf8), [("Content-Encoding", "gzip")]),
            ("corrupt deflate", 400, "corrupt", Array(zlib.prefix(2)) + [UInt8](repeating: 0xFF, count: 40), [("Content-Encoding", "deflate")]),
            ("gzip body sent as deflate", 400, "compressed stream", gz, [("Content-Encoding", "deflate")]),
            ("plain body sent as gzip", 400, "compressed stream", payload, [("Content-Encoding", "gzip")]),
            ("invalid UTF-8", 400, "UTF-8", gzip(Array("{\"batch_id\":\"".utf8) + [0xFF, 0xFE] + Array("\"}".utf8)), [("Content-Encoding", "gzip")]),
            ("unsupported encoding", 415, "Content-Encoding", gz, [("Content-Encoding", "br")]),
            ("stacked encodings", 415, "Content-Encoding", gzip(gz), [("Content-Encoding", "gzip, gzip")]),
            ("two encoding headers", 415, "Content-Encoding", gzip(gz), [("Content-Encoding", "gzip"), ("Content-Encoding", "gzip")]),
            ("wrong content type", 415, "Content-Type", gz, [("Content-Encoding", "gzip"), ("Content-Type", "text/plain")]),
            ("declared body over 1 MiB", 413, "limit", [UInt8](repeating: 0x20, count: 10), [("Content-Length", String((1 << 20) + 1))]),
            ("body over 1 MiB on the wire", 413, "on the wire",
             Array("{\"pad\":\"".utf8) + [UInt8](repeating: 0x61, count: 1 << 20) + Array("\"}".utf8), []),
            ("gzip bomb", 413, "decompressed", Deflater.compress([UInt8](repeating: 0x20, count: 64 << 20), format: .gzip, level: 9),
             [("Content-Encoding", "gzip")]),
            ("deflate bomb", 413, "decompressed", Deflater.compress([UInt8](repeating: 0x20, count: 64 << 20), format: .zlib, level: 9),
             [("Content-Encoding", "deflate")]),
        ]
    }()

    @Test func everyRejectionHasItsStatusAndLosesNothing() async throws {
        let daemon = try InProcessApp()
        #expect(try await daemon.post(gzip(Self.payload), encoding: "gzip").status == 202)
        let before = try daemon.stats()
        for testCase in Self.cases {
            var headers = testCase.headers
            if !headers.contains(where: { $0.0 == "Content-Type" }) { headers.append(("Content-Type", "application/json")) }
            // A declared length over the cap is answered from the header, whatever body follows.
            let response = try await daemon.request(.post, "/v1/batches", headers: headers, body: testCase.body)
            #expect(response.status == testCase.status, "\(testCase.name): \(response.status) \(response.text)")
            #expect(response.header("content-type") == "application/json", "\(testCase.name)")
            #expect(response.json?["error"]?.string != nil, "\(testCase.name): \(response.text)")
            let detail = (response.json?["detail"]?.string ?? "") + " " + (response.json?["field"]?.string ?? "")
            #expect(detail.contains(testCase.detail), "\(testCase.name): \(response.text)")
        }
        #expect(try daemon.stats() == before)
        #expect(try await daemon.get("/healthz").status == 200)
    }

    @Test func heightQueriesNeedModelAndLanguage() async throws {
        let daemon = try InProcessApp()
        let cases: [(String, String)] = [
            ("/v1/height?language=en-US", "model"),
            ("/v1/height?model=iPhone17,1", "language"),
            ("/v1/height?model=iPhone17,1&language=en-US&orientation=upsideDown", "orientation"),
            ("/v1/height?model=iPhone17,1&language=en-US&keyboard_type=emoji", "keyboard_type"),
            ("/v1/height?model=iPhone17,1&language=en-US&os=latest", "os"),
            ("/v1/height?model=iPhone%2017&language=en-US", "model"),
            ("/v1/heights", "model"),
            ("/v1/heights?model=iPhone17,1&os=x", "os"),
        ]
        for (path, field) in cases {
            let response = try await daemon.get(path)
            #expect(response.status == 400, "\(path)")
            #expect(response.json?["field"] == .string(field), "\(path): \(response.text)")
        }
        #expect(try await daemon.get("/v1/nope").status == 404)
    }

    @Test func customLimitsApply() async throws {
        let daemon = try InProcessApp(environment: ["KBTD_MAX_SAMPLES_PER_BATCH": "3", "KBTD_MAX_DECOMPRESSED_BYTES": "4096"])
        let four = try await daemon.post(gzip(batchBody(samples: shows(4, height: 336))), encoding: "gzip")
        #expect(four.status == 400)
        #expect(four.json?["detail"]?.string?.contains("1 to 3") == true)
        let padded = batchBody(rawSamples: [.object([("pad", .string(String(repeating: "x", count: 5000)))])])
        #expect(try await daemon.post(gzip(padded), encoding: "gzip").status == 413)
        #expect(try await daemon.post(gzip(batchBody(samples: shows(3, height: 336))), encoding: "gzip").status == 202)
    }
}
