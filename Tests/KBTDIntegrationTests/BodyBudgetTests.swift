import Foundation
import Glibc
import KBTDCompression
import KBTDCore
import Testing

/// What one address can make the daemon hold with requests it never finishes (docs/hostile-input.md,
/// "Bodies in flight" and "Answers nobody reads"), against a real daemon, memory read from /proc.
@Suite("Bodies in flight and unread answers, bounded", .ownThreads)
struct BodyBudgetTests {
    /// A deflate stream of 8,000,000 bytes of batch-like JSON, without its last bytes: a body that
    /// inflates to almost 8 MB and never ends.
    static let endlessDeflate: [UInt8] = {
        let sample = Array(#"{"t": 1760000000, "event": "show", "language": "en-US", "height": 336.0},"#.utf8)
        var json: [UInt8] = []
        json.reserveCapacity(8_000_000)
        while json.count + sample.count <= 8_000_000 { json += sample }
        let stream = Deflater.compress(json, format: .zlib)
        return Array(stream.dropLast(16))
    }()

    static func head(length: Int, encoding: String? = "deflate") -> [UInt8] {
        var head = "POST /v1/batches HTTP/1.1\r\nHost: kbtd.test\r\nContent-Type: application/json\r\nContent-Length: \(length)\r\n"
        if let encoding { head += "Content-Encoding: \(encoding)\r\n" }
        return Array((head + "\r\n").utf8)
    }

    /// 64 connections from one address each send a body that inflates to 8 MB and never end it:
    /// the daemon holds what they sent (about 8 KB each), not what it inflates to (8 MB each,
    /// 512 MB in all: the unit's MemoryMax).
    @Test func bodiesThatNeverEndHoldWhatTheySentNotWhatItInflatesTo() throws {
        let daemon = try TestDaemon().start()
        defer { #expect(daemon.stop() == 0) }
        let before = daemon.memory().rss
        #expect(before > 0, "no VmRSS for the daemon")
        let body = Self.endlessDeflate
        var open: [HTTPTestConnection] = []
        for _ in 0..<64 {
            let connection = try daemon.connection(from: "127.0.0.2")
            try connection.send(Self.head(length: 1_000_000) + body)
            open.append(connection)
        }
        try daemon.until("the daemon holds all 64 bodies") {
            (try daemon.metric("kbtd_body_bytes_held") ?? 0) >= Double(64 * body.count)
        }
        let held = try #require(try daemon.metric("kbtd_body_bytes_held"))
        #expect(held <= Double(64 * 2 * body.count), "held \(held) bytes for \(64 * body.count) sent")
        let after = daemon.memory().rss
        print("bodies that never end, HTTP/1.1, 64 connections: VmRSS \(before) -> \(after) MiB, \(held) bytes held")
        #expect(after - before < 48, "VmRSS grew from \(before) to \(after) MiB")
        // An honest batch meanwhile, from the same address, is answered.
        #expect(try daemon.connection(from: "127.0.0.2").request(
            "POST", "/v1/batches", headers: [("Content-Type", "application/json")], body: batchBody(samples: shows(1, height: 336))).status == 202)
        open.removeAll()
        try daemon.until("the closed connections' bodies are given back") {
            try daemon.metric("kbtd_body_bytes_held") == 0
        }
    }

    /// The same over h2 on the TLS listener: one connection opens 100 streams, each a
    /// `POST /v1/batches` whose deflate body (8 KB, sync-flushed, inflating to 8 MB) never ends. The
    /// batch path takes 16 streams and the router the other 84; all hold what they were sent.
    @Test func h2StreamsWhoseBodiesNeverEndHoldWhatTheySent() throws {
        let (daemon, pair) = try TLSTests.tlsDaemon()
        defer { #expect(daemon.stop() == 0) }
        let script = daemon.directory.appendingPathComponent("endless.py").path
        try Self.h2EndlessBodies.write(toFile: script, atomically: true, encoding: .utf8)
        let pid = try #require(daemon.pid)
        let run = try spawnAndWait("/usr/bin/env", ["python3", script, String(daemon.port), pair.ca, String(pid)], timeout: 90)
        #expect(run.status == 0, "\(run.stderr)")
        let result = try JSONParser.parse(Array(run.stdout.utf8))
        guard case .number(let before)? = result["rss_before"], case .number(let after)? = result["rss_after"],
              case .number(let held)? = result["held"], case .number(let sent)? = result["sent"] else {
            Issue.record("no figures: \(run.stdout)")
            return
        }
        print("bodies that never end, h2, 100 streams: VmRSS \(before / 1024) -> \(after / 1024) MiB, \(held) bytes held")
        #expect(held >= 100 * sent && held <= 2 * 100 * sent, "held \(held) bytes for 100 bodies of \(sent)")
        #expect(after - before < 48 * 1024, "VmRSS grew from \(before) to \(after) KiB")
    }

    /// Usage: endless.py PORT CA PID; prints the daemon's VmRSS (KiB) before and after, the bytes
    /// `kbtd_body_bytes_held` reports while the 100 bodies are open, and the bytes each body sent.
    static let h2EndlessBodies = HTTP2PythonClient.prelude + #"""
import ssl, urllib.request, zlib
port, ca, pid = int(sys.argv[1]), sys.argv[2], sys.argv[3]


def rss():
    with open(f"/proc/{pid}/status") as status:
        return int(next(line for line in status if line.startswith("VmRSS:")).split()[1])


def held():
    context = ssl.create_default_context(cafile=ca)
    text = urllib.request.urlopen(f"https://127.0.0.1:{port}/metrics", context=context, timeout=10).read().decode()
    return float(next(line for line in text.splitlines() if line.startswith("kbtd_body_bytes_held ")).split()[1])


sample = b'{"t": 1760000000, "event": "show", "language": "en-US", "height": 336.0},'
deflate = zlib.compressobj(6, zlib.DEFLATED, 15)
body = deflate.compress(sample * (8_000_000 // len(sample))) + deflate.flush(zlib.Z_SYNC_FLUSH)
before = rss()
sock = connect(port, ca)
HEADERS, DATA, SETTINGS, PING = 1, 0, 4, 6
END_HEADERS = 0x4
block = (b"\x83\x87" + integer(4, 4) + string("/v1/batches") + integer(1, 4) + string("127.0.0.1")
         + integer(31, 4) + string("application/json") + integer(26, 4) + string("deflate")
         + integer(28, 4) + string("1000000"))
buffer = bytearray()
deadline = time.monotonic() + 30


def frames():
    # Reads what the server sent and yields its frames (answering its SETTINGS).
    data = sock.recv(65536)
    if not data:
        raise SystemExit("closed by the server")
    buffer.extend(data)
    while len(buffer) >= 9 and len(buffer) >= 9 + int.from_bytes(buffer[:3], "big"):
        length, kind, flags, stream = int.from_bytes(buffer[:3], "big"), buffer[3], buffer[4], int.from_bytes(buffer[5:9], "big")
        del buffer[: 9 + length]
        if kind == SETTINGS and not flags & 1:
            sock.sendall(frame(SETTINGS, 1, 0))
        yield kind, flags, stream


# The server opens the connection's window to 1 MiB once it has the client's SETTINGS: wait for it.
opened = False
while not opened and time.monotonic() < deadline:
    opened = any(kind == 8 and stream == 0 for kind, _, stream in frames())
for index in range(100):
    stream = 1 + 2 * index
    sock.sendall(frame(HEADERS, END_HEADERS, stream, block))
    for start in range(0, len(body), 16384):
        sock.sendall(frame(DATA, 0, stream, body[start:start + 16384]))
sock.sendall(frame(PING, 0, 0, b"endless!"))
# The server answers frames in order: its PING ACK means every DATA frame before it was read.
acked = False
while not acked and time.monotonic() < deadline:
    acked = any(kind == PING and flags & 1 for kind, flags, _ in frames())
# The router's streams read their bodies in tasks of their own: wait for all 100 to be held.
while held() < 100 * len(body) and time.monotonic() < deadline:
    time.sleep(0.05)
print(json.dumps({"rss_before": before, "rss_after": rss(), "held": held(), "sent": len(body), "acked": acked}))
sock.close()
"""#

    /// With a 4 MiB budget (1 MiB for one network): two bodies of 300 KB still arriving take that
    /// network's share (512 KiB each, as held), a third from the same network is refused at once
    /// (503, Retry-After), another network still gets in, and the first two complete and are stored.
    @Test func aNetworkPastItsShareIsRefusedAndLosesNothingAccepted() throws {
        let daemon = try TestDaemon(environment: ["KBTD_BODY_BUDGET_BYTES": String(4 << 20)]).start()
        defer { #expect(daemon.stop() == 0) }
        // Leading blanks before a batch are valid JSON: the first 300,000 bytes are blanks.
        let batches = (0..<2).map { _ in batchBody(samples: shows(3, height: 336)) }
        let bodies = batches.map { [UInt8](repeating: 0x20, count: 400_000 - $0.count) + $0 }
        var held: [HTTPTestConnection] = []
        for body in bodies {
            let connection = try daemon.connection(from: "127.0.0.2")
            try connection.send(Self.head(length: body.count, encoding: nil) + Array(body[..<300_000]))
            held.append(connection)
        }
        try daemon.until("both bodies are held") { try daemon.metric("kbtd_body_bytes_held") == Double(2 * 524_288) }

        let third = try daemon.connection(from: "127.0.0.2")
        try third.send(Self.head(length: 400_000, encoding: nil) + [UInt8](repeating: 0x20, count: 10_000))
        let refused = try third.readResponse()
        #expect(refused.status == 503, "\(refused.text)")
        #expect(refused.header("Retry-After") == "1")
        #expect(refused.text.contains("your network's share"), "\(refused.text)")

        let other = try daemon.connection(from: "127.0.0.3").request(
            "POST", "/v1/batches", headers: [("Content-Type", "application/json")], body: batchBody(samples: shows(2, height: 336)))
        #expect(other.status == 202, "another network is not refused: \(other.text)")

        for (connection, body) in zip(held, bodies) {
            try connection.send(Array(body[300_000...]))
            let answer = try connection.readResponse()
            #expect(answer.status == 202, "\(answer.text)")
        }
        let stats = try daemon.stats()
        #expect(statsRow(stats, model: "iPhone17,1", language: "en-US")?["samples"] == .number(8), "3 + 3 + 2 samples stored")
        try daemon.until("every body is given back") { try daemon.metric("kbtd_body_bytes_held") == 0 }
    }

    /// One connection with a small receive buffer pipelines plain `GET /v1/heights` and never reads:
    /// the daemon stops reading once its answers wait for the socket, so the client cannot send more
    /// than the socket buffers hold, and memory stays where it was. Without that, every request
    /// read was answered into memory (55,000 big answers: 3.4 GB).
    @Test func answersNobodyReadsStopTheReadingNotTheMemory() throws {
        let daemon = try TestDaemon().start()
        defer { #expect(daemon.stop() == 0) }
        let before = daemon.memory().rss
        let request = Array("GET /v1/heights?model=iPhone17,1&os=26.1 HTTP/1.1\r\nHost: kbtd.test\r\n\r\n".utf8)
        let burst = Array([[UInt8]](repeating: request, count: 1_000).joined())
        let socket = try NonReadingSocket(port: daemon.port)
        var sent = 0
        // At most 600,000 requests (40 MB); the send stops far earlier once the daemon stops reading
        // (what the kernel's socket buffers take, a few MB).
        while sent < 600 * burst.count, socket.send(burst) { sent += burst.count }
        #expect(sent < 600 * burst.count, "the daemon read all \(sent / request.count) requests without their answers being read")
        let after = daemon.memory().rss
        print("answers nobody reads: \(sent / request.count) requests taken, VmRSS \(before) -> \(after) MiB")
        #expect(after - before < 48, "VmRSS grew from \(before) to \(after) MiB after \(sent / request.count) unread requests")
        socket.shutdownBothWays()
        // The daemon still answers others.
        #expect(try daemon.get("/healthz").status == 200)
    }
}

/// A TCP client with a 4 KiB receive buffer that sends and never reads; `send` gives up (false)
/// once the socket has not taken a byte for a second.
final class NonReadingSocket {
    private let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var small: Int32 = 4096
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        var smallSend: Int32 = 16_384
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &smallSend, socklen_t(MemoryLayout<Int32>.size))
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard status == 0 else { throw HTTPTestError(description: "connect failed: errno \(errno)") }
    }

    deinit { close(fd) }

    func shutdownBothWays() {
        shutdown(fd, Int32(SHUT_RDWR))
    }

    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }
}

/// The edges of HTTP/1.1 framing one client can reach with honest-looking requests.
@Suite("HTTP/1.1 framing edges against the live daemon", .ownThreads)
struct FramingEdgeTests {
    /// Ten batches pipelined in one write, the fifth with `Connection: close`: the first five are
    /// answered in order (202 each, stored), then the connection closes; the five after the close
    /// are neither answered nor stored. Before, the bytes after the close were answered with one 400
    /// at once, and the batches before it were lost (one stored without its 202).
    @Test func requestsBeforeAConnectionCloseAreAnsweredInOrderThenTheClose() throws {
        let daemon = try TestDaemon().start()
        defer { #expect(daemon.stop() == 0) }
        var wire: [UInt8] = []
        for index in 0..<10 {
            let body = batchBody(model: "iPhone16,\(index + 1)", samples: shows(2, height: 336))
            var head = "POST /v1/batches HTTP/1.1\r\nHost: kbtd.test\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n"
            if index == 4 { head += "Connection: close\r\n" }
            wire += Array((head + "\r\n").utf8) + body
        }
        let connection = try daemon.connection()
        try connection.send(wire)
        for index in 0..<5 {
            let answer = try connection.readResponse()
            #expect(answer.status == 202, "batch \(index + 1): \(answer.status) \(answer.text)")
        }
        #expect(connection.isClosedByPeer(within: 10), "the connection closes after the fifth answer")
        let stats = try daemon.stats()
        for index in 0..<10 {
            let row = statsRow(stats, model: "iPhone16,\(index + 1)", language: "en-US")
            #expect((row != nil) == (index < 5), "batch \(index + 1) stored: \(row != nil)")
        }
    }

    /// curl sends `Expect: 100-continue` with bodies over 1 MB (and some clients always): the
    /// daemon answers `100 Continue` at once, so the client does not wait out its expect timeout.
    @Test func expectContinueGetsContinueAtOnce() throws {
        let daemon = try TestDaemon().start()
        defer { #expect(daemon.stop() == 0) }
        let body = batchBody(samples: shows(2, height: 336))
        let connection = try daemon.connection()
        try connection.send(Array(("POST /v1/batches HTTP/1.1\r\nHost: kbtd.test\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.count)\r\nExpect: 100-continue\r\n\r\n").utf8))
        let interim = try connection.readResponse(bodiless: true)
        #expect(interim.status == 100)
        try connection.send(body)
        #expect(try connection.readResponse().status == 202)
    }
}
