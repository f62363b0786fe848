import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Plays systemd's side of sd_notify: a Unix datagram socket whose name goes
/// into `NOTIFY_SOCKET` (a path, or `@name` for the abstract namespace).
final class NotifyListener {
    let fd: Int32
    let name: String

    init(directory: URL, abstract: Bool = false) throws {
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes: [UInt8]
        if abstract {
            name = "@kbtd-test-\(UUID().uuidString)"
            bytes = Array(name.utf8)
            bytes[0] = 0
        } else {
            name = directory.appendingPathComponent("notify.sock").path
            bytes = Array(name.utf8) + [0]
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard status == 0 else { throw HTTPTestError(description: "bind notify socket failed: errno \(errno)") }
    }

    deinit { close(fd) }

    /// The next datagram, or nil after `seconds`.
    func receive(seconds: Double) -> String? {
        var timeout = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - Double(Int(seconds))) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }

    /// Datagrams in arrival order up to and including the first that `stop` accepts,
    /// or all that came within `seconds` when none did (a bound, not a measurement).
    func messages(until stop: (String) -> Bool, seconds: Double) -> [String] {
        var messages: [String] = []
        let deadline = Date().addingTimeInterval(seconds)
        while deadline.timeIntervalSinceNow > 0 {
            guard let message = receive(seconds: max(0.01, deadline.timeIntervalSinceNow)) else { continue }
            messages.append(message)
            if stop(message) { break }
        }
        return messages
    }
}

/// A TCP port that was free a moment ago (for tools that need a fixed port).
func freePort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return Int(UInt16(bigEndian: address.sin_port))
}
