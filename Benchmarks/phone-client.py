#!/usr/bin/env python3
"""A phone at app launch, many times over: for each request a new TCP connection, a TLS handshake
(full, or resuming the session a previous connection of this process saved), HTTP/2 by ALPN, one
GET, the whole answer read, the connection closed. Used by Benchmarks/phone.

  phone-client.py HOST PORT CA PATH (fresh|resumed) SECONDS PROCESSES

Prints one line: requests, seconds, req/s, p50 ms, p99 ms, resumed handshakes, non-200 answers.
The HTTP/2 it speaks is the least a request needs: the preface, an empty SETTINGS (and the ACK of
the server's), one HEADERS frame (HPACK: indexed :method GET and :scheme https, literal :path and
:authority), then frames are read until the stream ends. `:status 200` is the indexed byte 0x88,
which both kbtd (swift-nio-http2) and nginx send for it.
"""
import multiprocessing
import socket
import ssl
import struct
import sys
import time

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
SETTINGS_ACK = b"\x00\x00\x00\x04\x01\x00\x00\x00\x00"


def literal(index, value):
    data = value.encode()
    assert len(data) < 127
    return bytes([index, len(data)]) + data


def request_frames(path, authority):
    block = b"\x82\x87" + literal(0x04, path) + literal(0x01, authority)
    header = struct.pack(">I", len(block))[1:] + b"\x01\x05" + struct.pack(">I", 1)
    return PREFACE + SETTINGS + header + block


def one(context, host, port, frames, session):
    """One connection, one GET; returns (status_ok, resumed, session)."""
    raw = socket.create_connection((host, port))
    raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    tls = context.wrap_socket(raw, server_hostname=None, session=session)
    try:
        assert tls.selected_alpn_protocol() == "h2", tls.selected_alpn_protocol()
        tls.sendall(frames)
        buffer = b""
        ok = False
        while True:
            while len(buffer) >= 9:
                length = int.from_bytes(buffer[0:3], "big")
                if len(buffer) < 9 + length:
                    break
                kind, flags, stream = buffer[3], buffer[4], int.from_bytes(buffer[5:9], "big") & 0x7FFFFFFF
                payload = buffer[9:9 + length]
                buffer = buffer[9 + length:]
                if kind == 4 and not flags & 1:
                    tls.sendall(SETTINGS_ACK)
                elif kind == 1 and stream == 1:
                    ok = payload[:1] == b"\x88"
                    if flags & 1:
                        return ok, tls.session_reused, tls.session
                elif kind == 0 and stream == 1 and flags & 1:
                    return ok, tls.session_reused, tls.session
                elif kind == 7:
                    return False, tls.session_reused, tls.session
            data = tls.recv(65536)
            if not data:
                return False, tls.session_reused, tls.session
            buffer += data
    finally:
        tls.close()


def worker(args, results):
    host, port, ca, path, mode, seconds = args
    context = ssl.create_default_context(cafile=ca)
    context.check_hostname = False
    context.set_alpn_protocols(["h2"])
    frames = request_frames(path, f"{host}:{port}")
    latencies, resumed, failed = [], 0, 0
    session = None
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        start = time.perf_counter()
        ok, reused, new_session = one(context, host, port, frames, session if mode == "resumed" else None)
        latencies.append(time.perf_counter() - start)
        resumed += int(reused)
        failed += int(not ok)
        if mode == "resumed":
            session = new_session
    results.put((latencies, resumed, failed))


def main():
    host, port, ca, path, mode, seconds, processes = sys.argv[1:8]
    args = (host, int(port), ca, path, mode, float(seconds))
    results = multiprocessing.Queue()
    started = time.monotonic()
    workers = [multiprocessing.Process(target=worker, args=(args, results)) for _ in range(int(processes))]
    for process in workers:
        process.start()
    collected = [results.get() for _ in workers]
    for process in workers:
        process.join()
    elapsed = time.monotonic() - started
    latencies = sorted(value for part in collected for value in part[0])
    count = len(latencies)
    resumed = sum(part[1] for part in collected)
    failed = sum(part[2] for part in collected)
    p50 = latencies[count // 2] * 1000
    p99 = latencies[min(count - 1, int(count * 0.99))] * 1000
    print(f"requests {count} seconds {elapsed:.2f} rps {count / elapsed:.1f} p50_ms {p50:.3f} p99_ms {p99:.3f} "
          f"resumed {resumed} non200 {failed}")


if __name__ == "__main__":
    main()
