import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A one-request-per-connection HTTP proxy on a raw socket in front of the
/// real daemon, for the failures the daemon cannot be made to produce on cue:
/// 503/429 with `Retry-After`, and connections dropped before or after the
/// daemon saw the request. The script applies to POSTs in order; everything
/// else, and POSTs past the script, are forwarded untouched.
package final class FaultProxy: @unchecked Sendable {  // mutable state guarded by `lock`
    package enum Action {
        /// Answer without asking the daemon.
        case respond(status: Int, headers: [(String, String)])
        /// Read the request, then close the connection: the daemon never sees it.
        case dropBeforeForwarding
        /// Forward to the daemon (which stores the batch), then close without relaying its answer.
        case dropAfterForwarding
        /// Forward and relay.
        case forward
    }

    package struct Seen {
        package var method: String
        package var path: String
        package var headers: [(String, String)]
        package var body: [UInt8]
        /// What the proxy did with it.
        package var action: String
        /// The daemon's status when the request was forwarded.
        package var upstreamStatus: Int?
    }

    private let listener: Int32
    package private(set) var port = 0
    private let upstreamPort: Int
    private let lock = NSLock()
    private var script: [Action]
    private var seen: [Seen] = []

    package init(upstreamPort: Int, script: [Action]) throws {
        self.upstreamPort = upstreamPort
        self.script = script
        listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 64) == 0 else { throw HTTPTestError(description: "proxy bind/listen: errno \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    deinit { close(listener) }

    /// Stops accepting. Only `deinit` closes the fd (once): a second close
    /// could hit another thread's new socket.
    package func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
    }

    /// Every `POST /v1/batches` the proxy received, in order.
    package var requests: [Seen] { lock.withLock { seen.filter { $0.method == "POST" } } }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            let thread = Thread { [self] in
                handle(client)
                close(client)
            }
            thread.start()
        }
    }

    private func handle(_ fd: Int32) {
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard var request = readRequest(fd) else { return }
        // The script applies to batch uploads; height lookups always pass through.
        let action: Action = request.method != "POST" ? .forward : lock.withLock { script.isEmpty ? .forward : script.removeFirst() }
        switch action {
        case .respond(let status, let headers):
            request.action = "respond \(status)"
            record(request)
            let body = Array("{\"error\":\"injected by the test proxy\"}".utf8)
            write(fd, status: status, headers: headers + [("Content-Type", "application/json")], body: body)
        case .dropBeforeForwarding:
            request.action = "drop before forwarding"
            record(request)
        case .dropAfterForwarding, .forward:
            let forwarded = try? forward(request)
            request.upstreamStatus = forwarded?.status
            if case .forward = action, let forwarded {
                request.action = "forward"
                record(request)
                write(fd, status: forwarded.status, headers: forwarded.headers.filter {
                    !["content-length", "connection", "transfer-encoding"].contains($0.0.lowercased())
                }, body: forwarded.body)
            } else {
                request.action = "drop after forwarding"
                record(request)
            }
        }
    }

    private func record(_ request: Seen) { lock.withLock { seen.append(request) } }

    private func forward(_ request: Seen) throws -> HTTPTestResponse {
        let skip: Set<String> = ["host", "content-length", "expect", "connection", "transfer-encoding"]
        return try HTTPTestConnection(.tcp(host: "127.0.0.1", port: upstreamPort))
            .request(request.method, request.path, headers: request.headers.filter { !skip.contains($0.0.lowercased()) },
                     body: request.body)
    }

    private func write(_ fd: Int32, status: Int, headers: [(String, String)], body: [UInt8]) {
        var head = "HTTP/1.1 \(status) Injected\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        sendAll(fd, Array(head.utf8) + body)
    }

    private func sendAll(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { return }
            offset += sent
        }
    }

    /// Reads one request with a `Content-Length` body, answering `Expect: 100-continue`.
    private func readRequest(_ fd: Int32) -> Seen? {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        func fill() -> Bool {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return false }
            buffer.append(contentsOf: chunk[0..<count])
            return true
        }
        var headerEnd: Int?
        while headerEnd == nil {
            if buffer.count >= 4 {
                headerEnd = (0...(buffer.count - 4)).first { buffer[$0] == 13 && buffer[$0 + 1] == 10 && buffer[$0 + 2] == 13 && buffer[$0 + 3] == 10 }
            }
            if headerEnd == nil && !fill() { return nil }
        }
        let lines = String(decoding: buffer[0..<headerEnd!], as: UTF8.self).components(separatedBy: "\r\n")
        let requestLine = lines[0].split(separator: " ")
        guard requestLine.count >= 2 else { return nil }
        let headers = lines.dropFirst().compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name }?.1 }
        buffer.removeFirst(headerEnd! + 4)
        let length = header("content-length").flatMap { Int($0) } ?? 0
        if header("expect")?.lowercased() == "100-continue" && buffer.count < length {
            sendAll(fd, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
        }
        while buffer.count < length { guard fill() else { return nil } }
        return Seen(method: String(requestLine[0]), path: String(requestLine[1]), headers: headers,
                    body: Array(buffer.prefix(length)), action: "", upstreamStatus: nil)
    }
}

/// A listening socket that never accepts and never answers: connections
/// complete in the kernel's backlog and then hang, like a server that stopped responding.
package final class BlackHoleListener {
    private let fd: Int32
    package let port: Int

    package init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            close(fd)
            throw HTTPTestError(description: "black hole bind/listen: errno \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }
}
