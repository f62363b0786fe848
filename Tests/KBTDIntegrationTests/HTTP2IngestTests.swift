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

    /// The batch path keeps the connection's receive window at 1 MiB, not the 65,535 bytes a
    /// connection starts with: a phone's 16 batches in flight on one connection need no WINDOW_UPDATE
    /// every 32 KiB, each its own flush and TLS record. A client that keeps
    /// to flow control waits for the raise after its SETTINGS, then writes 16 bodies of about
    /// 36 KB (over 560 KB in all, each within its stream's 65,535 bytes) before reading anything;
    /// every one is stored and answered, and no frame is refused.
    @Test func sixteenBatchesWrittenBeforeAnyAnswerIsReadFitTheConnectionsWindow() throws {
        let (daemon, pair) = try TLSTests.tlsDaemon()
        defer { #expect(daemon.stop() == 0) }
        let streams = 16, samples = 300
        var files: [String] = []
        for stream in 0..<streams {
            let body = batchBody(samples: shows(samples, height: Double(330 + stream % 8)))
            #expect(body.count > 30_000 && body.count < 65_535, "body of \(body.count) bytes")
            let path = daemon.directory.appendingPathComponent("wide-\(stream).json").path
            try Data(body).write(to: URL(fileURLWithPath: path))
            files.append(path)
        }
        let script = daemon.directory.appendingPathComponent("window.py").path
        try Self.windowClient.write(toFile: script, atomically: true, encoding: .utf8)
        let run = try spawnAndWait("/usr/bin/env", ["python3", script, String(daemon.port), pair.ca] + files, timeout: 90)
        #expect(run.status == 0, "\(run.stderr)")
        let result = try JSONParser.parse(Array(run.stdout.utf8))
        let increment = result["window_increment"]?.double ?? 0
        #expect(increment + 65_535 >= Double(streams * 65_536), "the connection's window was raised to \(increment + 65_535) bytes: \(run.stdout)")
        #expect(result["goaway"] == .null && result["rst"]?.array?.isEmpty == true, "\(run.stdout)")
        let answers = result["answers"]?.array ?? []
        #expect(answers.count == streams, "\(run.stdout)")
        for answer in answers {
            let body = try JSONParser.parse(Array((answer.string ?? "").utf8))
            #expect(body["accepted"] == .number(Double(samples)) && body["duplicate"] != .bool(true), "\(answer)")
        }
        let metrics = try curl(["--http2", "--cacert", pair.ca, "https://127.0.0.1:\(daemon.port)/metrics"]).stdout
        #expect(metrics.contains("kbtd_batches_total{outcome=\"stored\"} \(streams)"), "\(metrics)")
    }

    /// Usage: window.py PORT CA BODY...; one stream per body file, all written before any answer is
    /// read, once the server has raised the connection's window. Prints the raise, the answers and
    /// any GOAWAY or RST_STREAM as JSON. Every wait is bounded (30 s).
    static let windowClient = HTTP2PythonClient.prelude + #"""
port, ca, files = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
DEADLINE = time.monotonic() + 30
DATA, HEADERS, RST, SETTINGS, GOAWAY, WINDOW_UPDATE = 0, 1, 3, 4, 7, 8
END_STREAM, END_HEADERS = 0x1, 0x4


def literal(index, value):
    # A literal field without indexing, its name from the static table.
    return integer(index, 4) + string(value)


sock = connect(port, ca)

state = {"window_increment": None, "goaway": None, "rst": [], "closed": False}
bodies, ended = {}, set()
buffer = bytearray()


def read():
    left = max(0.0, DEADLINE - time.monotonic())
    if not sock.pending() and not select.select([sock], [], [], left)[0]:
        return
    try:
        data = sock.recv(65536)
    except (ConnectionError, ssl.SSLError, OSError):
        data = b""
    if not data:
        state["closed"] = True
        return
    buffer.extend(data)
    while len(buffer) >= 9 and len(buffer) >= 9 + int.from_bytes(buffer[:3], "big"):
        length = int.from_bytes(buffer[:3], "big")
        kind, flags, stream = buffer[3], buffer[4], int.from_bytes(buffer[5:9], "big") & 0x7FFFFFFF
        payload = bytes(buffer[9 : 9 + length])
        del buffer[: 9 + length]
        if kind == SETTINGS and not flags & 1:
            sock.sendall(frame(SETTINGS, 1, 0))
        elif kind == WINDOW_UPDATE and stream == 0 and state["window_increment"] is None:
            state["window_increment"] = int.from_bytes(payload[:4], "big") & 0x7FFFFFFF
        elif kind == GOAWAY:
            state["goaway"] = int.from_bytes(payload[4:8], "big")
        elif kind == RST:
            state["rst"].append(stream)
            ended.add(stream)
        elif kind == DATA:
            bodies[stream] = bodies.get(stream, b"") + payload
            if flags & END_STREAM:
                ended.add(stream)
        elif kind == HEADERS and flags & END_STREAM:
            ended.add(stream)


def alive():
    return not state["closed"] and state["goaway"] is None and time.monotonic() < DEADLINE


while state["window_increment"] is None and alive():
    read()
if state["window_increment"] is not None:
    chunk = b""
    for number, path in enumerate(files):
        stream, body = 2 * number + 1, open(path, "rb").read()
        block = (b"\x83\x87" + literal(4, "/v1/batches") + literal(1, "127.0.0.1")
                 + literal(31, "application/json") + literal(28, str(len(body))))
        chunk += frame(HEADERS, END_HEADERS, stream, block)
        pieces = [body[i : i + 16384] for i in range(0, len(body), 16384)]
        for index, piece in enumerate(pieces):
            chunk += frame(DATA, END_STREAM if index == len(pieces) - 1 else 0, stream, piece)
    sock.sendall(chunk)
    while len(ended) < len(files) and alive():
        read()
print(json.dumps({"window_increment": state["window_increment"], "goaway": state["goaway"], "rst": state["rst"],
                  "answers": [bodies.get(2 * n + 1, b"").decode("utf-8", "replace") for n in range(len(files)) if 2 * n + 1 in ended]}))
"""#
}
