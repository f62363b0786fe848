import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The sd_notify datagram protocol, spoken directly (no libsystemd): one
/// datagram of `KEY=value` lines to the socket named by `NOTIFY_SOCKET`
/// (a path, or `@name` in the abstract namespace).
public struct SystemdNotify: Sendable {
    public let socketPath: String

    /// nil when the process is not supervised by a notify-aware manager.
    public init?(environment: [String: String] = ProcessInfo.processInfo.environment) {
        guard let path = environment["NOTIFY_SOCKET"], !path.isEmpty, path.hasPrefix("/") || path.hasPrefix("@") else { return nil }
        socketPath = path
    }

    /// Sends one message; false when it could not be delivered.
    @discardableResult
    public func send(_ message: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(socketPath.utf8)
        if pathBytes.first == UInt8(ascii: "@") { pathBytes[0] = 0 }  // abstract namespace
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
        }
        // Abstract names are not NUL-terminated: the length says where they end.
        let length = socklen_t(MemoryLayout<sa_family_t>.size + pathBytes.count + (pathBytes.first == 0 ? 0 : 1))
        let payload = Array(message.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sockaddrPointer in
                payload.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), sockaddrPointer, length) }
            }
        }
        return sent == payload.count
    }

    /// The watchdog interval systemd asked for (`WATCHDOG_USEC`), when it is meant for this process.
    public static func watchdogInterval(environment: [String: String] = ProcessInfo.processInfo.environment) -> Duration? {
        guard let text = environment["WATCHDOG_USEC"], let usec = UInt64(text), usec > 0 else { return nil }
        if let pid = environment["WATCHDOG_PID"], Int32(pid) != getpid() { return nil }
        return .microseconds(Int64(usec))
    }
}
