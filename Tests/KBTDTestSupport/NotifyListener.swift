import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Plays systemd's side of sd_notify: a Unix datagram socket whose name goes
/// into `NOTIFY_SOCKET` (a path, or `@name` for the abstract namespace).
package final class NotifyListener {
    package let fd: Int32
    package let name: String

    package convenience init(directory: URL, abstract: Bool = false) throws {
        try self.init(path: abstract ? nil : directory.appendingPathComponent("notify.sock").path)
    }

    /// A socket at `path`, or in the abstract namespace when nil.
    package init(path: String?) throws {
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes: [UInt8]
        if let path {
            name = path
            bytes = Array(name.utf8) + [0]
        } else {
            name = "@kbtd-test-\(UUID().uuidString)"
            bytes = Array(name.utf8)
            bytes[0] = 0
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard status == 0 else { throw HTTPTestError(description: "bind notify socket \(name) failed: errno \(errno)") }
    }

    deinit { close(fd) }

    /// The next datagram; nil when the deadline passes or `stop` fires first (the sender exited).
    package func receive(until deadline: Deadline, or stop: OnceEvent? = nil) -> String? {
        let ready = waitReadable([fd] + (stop.map { [$0.readEnd] } ?? []), until: deadline)
        guard ready.contains(0) else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }

    /// The next datagram, or nil after `seconds`.
    package func receive(seconds: Double) -> String? {
        receive(until: Deadline(seconds, for: "a datagram on \(name)"))
    }

    /// Datagrams in arrival order up to and including the first that `stop` accepts,
    /// or all that came within `seconds` when none did (a bound, not a measurement).
    package func messages(until stop: (String) -> Bool, seconds: Double) -> [String] {
        var messages: [String] = []
        let deadline = Deadline(seconds, for: "a datagram on \(name)")
        while !deadline.hasPassed {
            guard let message = receive(until: deadline) else { continue }
            messages.append(message)
            if stop(message) { break }
        }
        return messages
    }
}
