import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Waits until `condition` holds, checking every 20 ms, for at most `seconds`; false when it never did.
/// A bound on a wait for a state, never a measurement: blocking, so only for `.ownThreads` suites.
func eventually(seconds: Double = 60, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while true {
        if try condition() { return true }
        if deadline.timeIntervalSinceNow <= 0 { return false }
        usleep(20_000)
    }
}

/// A loopback TCP port the kernel gave this test, bound and never listened on:
/// a connection to it is refused, and no other test or daemon can take it while
/// this value lives (unlike a port that was free a moment ago).
final class UnreachablePort: Sendable {
    private let fd: Int32
    let port: Int

    init() {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }
}

/// The port of an `UnreachablePort` held until the test run ends (a handful per run).
func unreachablePort() -> Int {
    let reserved = UnreachablePort()
    UnreachablePort.held.withLock { $0.append(reserved) }
    return reserved.port
}

extension UnreachablePort {
    static let held = Mutex<[UnreachablePort]>([])
}
