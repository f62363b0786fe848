/// The start of the hand-built h2 clients the h2 tests run in python3 (`HTTP2RedTeamTests.client`,
/// `HTTP2IngestTests.windowClient`): frames, HPACK integers and string literals, and a TLS
/// connection with ALPN h2 that has sent the preface and an empty SETTINGS. Each test's script
/// follows it with its own constants, reads and checks.
enum HTTP2PythonClient {
    static let prelude = #"""
import json, select, socket, ssl, sys, time


def frame(kind, flags, stream, payload=b""):
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


def integer(value, prefix_bits, first=0):
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out, value = [first | limit], value - limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    return bytes(out + [value])


def string(text):
    data = text.encode() if isinstance(text, str) else text
    return integer(len(data), 7) + data


def connect(port, ca):
    # TLS with ALPN h2 to 127.0.0.1:port, trusting ca; sends the preface and an empty SETTINGS (type 4).
    context = ssl.create_default_context(cafile=ca)
    context.set_alpn_protocols(["h2"])
    sock = context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname="127.0.0.1")
    assert sock.selected_alpn_protocol() == "h2", sock.selected_alpn_protocol()
    sock.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0))
    return sock


"""#
}
