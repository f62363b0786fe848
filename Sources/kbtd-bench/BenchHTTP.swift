import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A minimal blocking keep-alive HTTP/1.1 client: the load generator must
/// cost far less than the server it measures.
final class BenchConnection {
    let fd: Int32
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    private var pending: [UInt8] = []

    init(host: String, port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        let status = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        // `deinit` closes `fd` even when init throws: closing here too would be a double close.
        guard status == 0 else { throw BenchError("connect to \(host):\(port) failed: errno \(errno)") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close(fd) }

    /// Sends `request` (a complete HTTP request) and returns the status code.
    func roundTrip(_ request: [UInt8]) throws -> Int {
        var offset = 0
        while offset < request.count {
            let sent = request[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw BenchError("send failed: errno \(errno)") }
            offset += sent
        }
        return try readResponse()
    }

    private func fill() throws {
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { throw BenchError("connection closed") }
        pending.append(contentsOf: buffer[0..<count])
    }

    private func readResponse() throws -> Int {
        var headerEnd = -1
        var searchFrom = 0
        while headerEnd < 0 {
            if pending.count >= 4 {
                for i in searchFrom...(pending.count - 4) where pending[i] == 13 && pending[i + 1] == 10 && pending[i + 2] == 13 && pending[i + 3] == 10 {
                    headerEnd = i
                    break
                }
                searchFrom = max(0, pending.count - 3)
            }
            if headerEnd < 0 { try fill() }
        }
        let head = String(decoding: pending[0..<headerEnd], as: UTF8.self)
        let status = Int(head.split(separator: " ", maxSplits: 2)[1]) ?? 0
        var length = 0
        for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
            length = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
        }
        let total = headerEnd + 4 + length
        while pending.count < total { try fill() }
        pending.removeFirst(total)
        return status
    }
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// CPU seconds this process has used (user + system).
func processCPUSeconds() -> Double { ResourceUse.now().total }

/// User and system CPU seconds of this process (getrusage).
struct ResourceUse {
    var user: Double
    var system: Double
    var total: Double { user + system }

    static func now() -> ResourceUse {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return ResourceUse(user: Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6,
                           system: Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6)
    }

    static func - (a: ResourceUse, b: ResourceUse) -> ResourceUse {
        ResourceUse(user: a.user - b.user, system: a.system - b.system)
    }
}

/// CPU seconds another process has used, from /proc (Linux).
func processCPUSeconds(pid: Int32) -> Double? {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return nil }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// Resident memory of a process in MiB (VmRSS), from /proc.
func residentMiB(pid: Int32) -> Double? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
          let kib = Double(line.split(separator: " ").dropFirst().first ?? "") else { return nil }
    return kib / 1024
}

func percentile(_ sorted: [Double], _ q: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, max(0, Int((q * Double(sorted.count)).rounded(.up)) - 1))]
}
