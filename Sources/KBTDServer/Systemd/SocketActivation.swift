import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A listening socket systemd passed us (`LISTEN_FDS`), with its `FileDescriptorName=`.
public struct InheritedSocket: Sendable, Equatable {
    public var fd: Int32
    public var name: String
}

/// Socket activation: adopt the listening fds from `LISTEN_FDS`/`LISTEN_PID`/
/// `LISTEN_FDNAMES`. They start at fd 3; `LISTEN_PID` must be this process
/// (otherwise they were meant for a parent). The variables are removed so a
/// child process never mistakes them for its own.
public enum SocketActivation {
    public static let firstFD: Int32 = 3

    public static func inheritedSockets() -> [InheritedSocket] {
        let environment = ProcessInfo.processInfo.environment
        defer {
            unsetenv("LISTEN_PID")
            unsetenv("LISTEN_FDS")
            unsetenv("LISTEN_FDNAMES")
        }
        guard let pidText = environment["LISTEN_PID"], Int32(pidText) == getpid(),
              let countText = environment["LISTEN_FDS"], let count = Int32(countText), count > 0 else { return [] }
        let names = environment["LISTEN_FDNAMES"]?.split(separator: ":", omittingEmptySubsequences: false).map(String.init) ?? []
        return (0..<count).map { offset in
            let fd = firstFD + offset
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            let name = Int(offset) < names.count ? names[Int(offset)] : "unknown"
            return InheritedSocket(fd: fd, name: name)
        }
    }
}
