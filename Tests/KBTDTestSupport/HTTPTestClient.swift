import Foundation
import KBTDCore
#if canImport(Glibc)
import Glibc
#endif

/// A parsed HTTP/1.1 response.
package struct HTTPTestResponse {
    package var status: Int
    package var headers: [(String, String)]
    package var body: [UInt8]

    package init(status: Int, headers: [(String, String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    package func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    package var text: String { String(decoding: body, as: UTF8.self) }

    /// The body parsed as JSON (fails the test's expectation when it is not).
    package var json: JSONValue? { try? JSONParser.parse(body) }
}

package struct HTTPTestError: Error, CustomStringConvertible {
    package var description: String

    package init(description: String) { self.description = description }
}

/// A deliberately small blocking HTTP/1.1 client over a raw socket, so tests
/// control every byte (stacked headers, truncated bodies, Unix sockets).
package final class HTTPTestConnection {
    package let fd: Int32

    package enum Endpoint {
        case tcp(host: String, port: Int)
        case unix(path: String)
    }

    /// `source` binds the client socket to that loopback address first (127.0.0.x),
    /// so one machine plays many client networks.
    package init(_ endpoint: Endpoint, timeoutSeconds: Int = 30, source: String? = nil) throws {
        switch endpoint {
        case .tcp(let host, let port):
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            if let source {
                var local = sockaddr_in()
                local.sin_family = sa_family_t(AF_INET)
                inet_pton(AF_INET, source, &local.sin_addr)
                let bound = withUnsafePointer(to: &local) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
                guard bound == 0 else { throw HTTPTestError(description: "bind to \(source) failed: errno \(errno)") }
            }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET, host, &address.sin_addr)
            let status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            // No close here: `deinit` runs for a class whose init throws after `fd` is set,
            // and a second close could hit another thread's new socket.
            guard status == 0 else { throw HTTPTestError(description: "connect to \(host):\(port) failed: errno \(errno)") }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        case .unix(let path):
            fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                let bytes = Array(path.utf8.prefix(raw.count - 1))
                raw.copyBytes(from: bytes + [0])
            }
            let status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            guard status == 0 else { throw HTTPTestError(description: "connect to \(path) failed: errno \(errno)") }
        }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// Ends the connection without giving the fd number back: only `deinit`
    /// closes the fd, so no other thread's new socket can be closed by mistake.
    package func shutdownBothWays() {
        shutdown(fd, Int32(SHUT_RDWR))
    }

    package func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw HTTPTestError(description: "send failed: errno \(errno)") }
            offset += sent
        }
    }

    /// Sends a request with `Content-Length` (unless `headers` sets framing itself) and reads the response.
    package func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = []) throws -> HTTPTestResponse {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: kbtd.test\r\n"
        let setsFraming = headers.contains { ["content-length", "transfer-encoding"].contains($0.0.lowercased()) }
        if !setsFraming && (method == "POST" || !body.isEmpty) { head += "Content-Length: \(body.count)\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        try send(Array(head.utf8) + body)
        return try readResponse(bodiless: method == "HEAD")
    }

    private var buffer: [UInt8] = []

    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if count < 0 { throw HTTPTestError(description: "recv failed: errno \(errno)") }
        if count == 0 { return false }
        buffer.append(contentsOf: chunk[0..<count])
        return true
    }

    /// `bodiless`: the answer to a HEAD request, whose Content-Length describes a body never sent.
    package func readResponse(bodiless: Bool = false) throws -> HTTPTestResponse {
        var headerEnd: Int?
        while headerEnd == nil {
            if let range = findCRLFCRLF() { headerEnd = range; break }
            guard try fill() else { throw HTTPTestError(description: "connection closed before a response") }
        }
        let headText = String(decoding: buffer[0..<headerEnd!], as: UTF8.self)
        buffer.removeFirst(headerEnd! + 4)
        var lines = headText.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw HTTPTestError(description: "bad status line: \(headText.prefix(80))")
        }
        let headers = lines.compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        if bodiless { return HTTPTestResponse(status: status, headers: headers, body: []) }
        let response = HTTPTestResponse(status: status, headers: headers, body: [])
        var body: [UInt8] = []
        if status == 304 || status == 204 {
            // no body
        } else if let length = response.header("content-length").flatMap(Int.init) {
            while buffer.count < length { guard try fill() else { throw HTTPTestError(description: "short body") } }
            body = Array(buffer[0..<length])
            buffer.removeFirst(length)
        } else if response.header("transfer-encoding")?.lowercased() == "chunked" {
            while true {
                while findCRLF() == nil { guard try fill() else { throw HTTPTestError(description: "short chunk") } }
                let lineEnd = findCRLF()!
                let size = Int(String(decoding: buffer[0..<lineEnd], as: UTF8.self).split(separator: ";")[0], radix: 16) ?? 0
                buffer.removeFirst(lineEnd + 2)
                while buffer.count < size + 2 { guard try fill() else { throw HTTPTestError(description: "short chunk") } }
                body.append(contentsOf: buffer[0..<size])
                buffer.removeFirst(size + 2)
                if size == 0 { break }
            }
        } else {
            while try fill() {}
            body = buffer
            buffer = []
        }
        return HTTPTestResponse(status: status, headers: headers, body: body)
    }

    /// True when the peer has closed the connection (reads EOF within `seconds`).
    package func isClosedByPeer(within seconds: Int) -> Bool {
        isClosedByPeer(until: Deadline(Double(seconds), for: "the peer to close the connection"))
    }

    /// Reads (and drops) whatever the peer sends until it closes; false at the deadline.
    /// `cap` (milliseconds) ends the wait early, for a caller that acts between reads.
    package func isClosedByPeer(until deadline: Deadline, cap: Int32? = nil) -> Bool {
        var bytes = [UInt8](repeating: 0, count: 4096)
        while !deadline.hasPassed {
            guard !waitReadable([fd], until: deadline, cap: cap).isEmpty else {
                if cap != nil { return false }
                continue
            }
            // A final answer (say a 400) may come first: read past it to the close.
            let received = bytes.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if received == 0 { return true }
            if received < 0 && errno != EAGAIN && errno != EINTR { return errno == ECONNRESET || errno == EPIPE }
        }
        return false
    }

    private func findCRLFCRLF() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for i in 0...(buffer.count - 4) where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
            return i
        }
        return nil
    }

    private func findCRLF() -> Int? {
        guard buffer.count >= 2 else { return nil }
        for i in 0...(buffer.count - 2) where buffer[i] == 13 && buffer[i + 1] == 10 { return i }
        return nil
    }
}
