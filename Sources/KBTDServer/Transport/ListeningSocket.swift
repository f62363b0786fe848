import Glibc
import NIOCore

/// TCP listening sockets kbtd binds itself, one per event loop, all on one address with
/// `SO_REUSEPORT`: the kernel spreads the incoming connections over them and each loop accepts
/// only from its own (`HTTPListener`), as nginx's `reuseport` does, with no wake-up of the other
/// loops. (Two loops polling one socket would both wake for every connection.)
enum ListeningSocket {
    /// Binds `count` sockets on `host:port` (resolved once; a port of 0 is the kernel's choice for
    /// the first, which the others then share) and listens on each. A port something else holds
    /// fails as a plain bind would: a socket without `SO_REUSEPORT` is bound there first (and
    /// closed), so another kbtd on the port is refused, not joined. Descriptors are close-on-exec.
    static func bind(host: String, port: Int, backlog: CInt, count: Int) throws -> [CInt] {
        var address = try SocketAddress.makeAddressResolvingHost(host, port: port)
        if port != 0 {
            let probe = try socket(address, reusePort: false)
            Glibc.close(probe)
        }
        var descriptors: [CInt] = []
        do {
            for _ in 0..<max(count, 1) {
                let fd = try socket(address, reusePort: true)
                descriptors.append(fd)
                guard listen(fd, backlog) == 0 else { throw SocketError(call: "listen", errno: errno) }
                if address.port == 0 {
                    var storage = sockaddr_storage()
                    var size = socklen_t(MemoryLayout<sockaddr_storage>.size)
                    let named = withUnsafeMutablePointer(to: &storage) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &size) }
                    }
                    guard named == 0 else { throw SocketError(call: "getsockname", errno: errno) }
                    let networkOrder = withUnsafeBytes(of: &storage) { bytes -> UInt16 in
                        // sin_port and sin6_port sit at the same offset, after the family.
                        bytes.loadUnaligned(fromByteOffset: MemoryLayout<sa_family_t>.size, as: UInt16.self)
                    }
                    address.port = Int(UInt16(bigEndian: networkOrder))
                }
            }
        } catch {
            for fd in descriptors { Glibc.close(fd) }
            throw error
        }
        return descriptors
    }

    /// A stream socket bound to `address` (address reuse on, as NIO's bootstrap sets it).
    private static func socket(_ address: SocketAddress, reusePort: Bool) throws -> CInt {
        let fd = Glibc.socket(address.protocol.rawValue, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SocketError(call: "socket", errno: errno) }
        do {
            var on: CInt = 1
            guard setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<CInt>.size)) == 0 else {
                throw SocketError(call: "setsockopt(SO_REUSEADDR)", errno: errno)
            }
            if reusePort {
                guard setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, socklen_t(MemoryLayout<CInt>.size)) == 0 else {
                    throw SocketError(call: "setsockopt(SO_REUSEPORT)", errno: errno)
                }
            }
            let bound = address.withSockAddr { pointer, size in Glibc.bind(fd, pointer, socklen_t(size)) }
            guard bound == 0 else { throw SocketError(call: "bind(\(address))", errno: errno) }
        } catch {
            Glibc.close(fd)
            throw error
        }
        return fd
    }

    static func close(_ fd: CInt) {
        _ = Glibc.close(fd)
    }

    struct SocketError: Error, CustomStringConvertible {
        let call: String
        let errno: CInt
        var description: String { "\(call): \(String(cString: strerror(errno))) (errno: \(errno))" }
    }
}
