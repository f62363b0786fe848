import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A start that failed because a port it was given was taken meanwhile (EADDRINUSE).
package struct PortTaken: Error, CustomStringConvertible {
    package let description: String

    package init(description: String) { self.description = description }
}

/// Ports for the tools that cannot bind port 0 and report what they got: nginx, PostgreSQL
/// over TCP, Prometheus and systemd-socket-activate. kbtd itself never needs this: it
/// binds `127.0.0.1:0` and logs the port (TestDaemon reads it).
///
/// The kernel chooses the ports (bind to port 0, all at once so they differ), they are
/// released, and the tool binds them. In between, another process may be given the same
/// port by the kernel (rare); the tool then fails with "address in use", `start` throws
/// `PortTaken`, and the whole start is tried again with fresh ports. This is the only
/// place in the tests that chooses a port for someone else.
package enum ToolPorts {
    package static let attempts = 5

    package static func start<T>(_ count: Int, _ what: String, _ start: ([Int]) throws -> T) throws -> T {
        var taken: [String] = []
        for _ in 0..<attempts {
            do {
                return try start(kernelPorts(count))
            } catch let error as PortTaken {
                taken.append(error.description)
            }
        }
        throw HTTPTestError(description: "\(what): a port was taken on each of \(attempts) starts:\n" + taken.joined(separator: "\n"))
    }

    /// Whether a tool's log says it could not bind.
    package static func saysAddressInUse(_ log: String) -> Bool {
        log.localizedCaseInsensitiveContains("address already in use")
    }

    private static func kernelPorts(_ count: Int) -> [Int] {
        let descriptors = (0..<count).map { _ in socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0) }
        defer { descriptors.forEach { close($0) } }
        return descriptors.map { fd in
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
            _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
            return Int(UInt16(bigEndian: address.sin_port))
        }
    }
}
