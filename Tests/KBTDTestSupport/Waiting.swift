import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// Waits in the tests are for events (a process's exit, a datagram, a file written, a
// connection closed), each bounded by a `Deadline` whose failure names what was awaited.
// Nothing here sleeps: a blocking wait is a poll(2) on descriptors that become readable
// when the event happens, and it blocks only the `.ownThreads` threads the process suites
// run on. The async forms hold no thread at all.

/// A bounded wait that ended before what it awaited happened.
package struct WaitTimedOut: Error, CustomStringConvertible {
    package let description: String
}

/// The moment by which something must have happened; `failure` names it.
package struct Deadline: Sendable {
    package let what: String
    package let seconds: Double
    private let end: ContinuousClock.Instant

    package init(_ seconds: Double, for what: String) {
        self.what = what
        self.seconds = seconds
        end = .now + .milliseconds(Int64(seconds * 1000))
    }

    package var hasPassed: Bool { ContinuousClock.now >= end }

    /// What is left, in milliseconds for poll(2) (0 once passed).
    package var millisecondsLeft: Int32 {
        let left = end - .now
        guard left > .zero else { return 0 }
        let (seconds, attoseconds) = left.components
        return Int32(min(Int64(Int32.max), seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1))
    }

    /// The error a test throws (or prints) when the deadline passed first.
    package func failure(_ detail: String = "") -> WaitTimedOut {
        WaitTimedOut(description: "timed out after \(seconds) s waiting for \(what)" + (detail.isEmpty ? "" : ":\n\(detail)"))
    }
}

/// Blocks until one of `descriptors` is readable, the deadline passes, or `cap` milliseconds
/// pass (when given); the indices of the readable ones. For `.ownThreads` suites only.
@discardableResult
package func waitReadable(_ descriptors: [Int32], until deadline: Deadline, cap: Int32? = nil) -> [Int] {
    var set = descriptors.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
    let timeout = min(deadline.millisecondsLeft, cap ?? .max)
    while true {
        let count = poll(&set, nfds_t(set.count), timeout)
        if count >= 0 { return set.indices.filter { set[$0].revents != 0 } }
        if errno != EINTR { return [] }
    }
}

/// Something that happens once (a process's exit): a socket pair whose read end becomes
/// readable then, so a wait can poll(2) it beside other descriptors, and async code can
/// await it without holding a thread.
package final class OnceEvent: @unchecked Sendable {  // descriptors are fixed in init; `state` is locked
    package let readEnd: Int32
    private let writeEnd: Int32
    private let state = Mutex<(fired: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    package init() {
        var pair: [Int32] = [-1, -1]
        // SOCK_CLOEXEC: no spawned child inherits the pair (a child holding the write end is harmless, but untidy).
        precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0)
        readEnd = pair[0]
        writeEnd = pair[1]
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    package func fire() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard !state.fired else { return [] }
            state.fired = true
            defer { state.waiters = [] }
            return state.waiters
        }
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
        for waiter in waiters { waiter.resume() }
    }

    package var hasFired: Bool { state.withLock { $0.fired } }

    /// Blocks (own threads only) until fired or the deadline; true when fired.
    package func wait(until deadline: Deadline) -> Bool {
        hasFired || !waitReadable([readEnd], until: deadline).isEmpty
    }

    /// Suspends, holding no thread, until fired.
    package func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.fired { return true }
                state.waiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }
}

/// Changes to a file or a directory's entries, through inotify: `wait` returns when the
/// watched path was written to (or an entry was created in it), or at the deadline.
package final class FileWatch {
    private let fd: Int32

    package init(_ path: String) throws {
        fd = inotify_init1(Int32(IN_CLOEXEC) | Int32(IN_NONBLOCK))
        guard fd >= 0, inotify_add_watch(fd, path, UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE)) >= 0 else {
            throw WaitTimedOut(description: "cannot watch \(path): errno \(errno)")
        }
    }

    deinit { close(fd) }

    /// The watch's descriptor, readable after a change (for `waitReadable` beside other events).
    package var descriptor: Int32 { fd }

    /// Forgets the changes seen so far.
    package func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while buffer.withUnsafeMutableBytes({ read(fd, $0.baseAddress, $0.count) }) > 0 {}
    }
}

/// Blocks (own threads only) until `condition` holds, re-checking it each time the file or
/// directory at `path` changes (inotify), and fails naming `what` at the deadline, or at once
/// when `stop` fires first (a process that exited cannot write what was awaited).
package func waitForChange(of path: String, _ what: String, seconds: Double = 60, stop: OnceEvent? = nil,
                   detail: () -> String = { "" }, _ condition: () throws -> Bool) throws {
    let watch = try FileWatch(path)
    let deadline = Deadline(seconds, for: what)
    while true {
        watch.drain()
        if try condition() { return }
        if let stop, stop.hasFired {
            if try condition() { return }
            throw WaitTimedOut(description: "the process exited while waiting for \(what)" + { let d = detail(); return d.isEmpty ? "" : ":\n\(d)" }())
        }
        if deadline.hasPassed { throw deadline.failure(detail()) }
        waitReadable([watch.descriptor] + (stop.map { [$0.readEnd] } ?? []), until: deadline)
    }
}

/// Re-asks `condition` until it holds; fails naming `what` at the deadline.
///
/// For state only a request can observe (a metric, `/healthz`, `kbtd stats`): each
/// answer is a fresh observation, and the next question is asked when `pace` fires or
/// after the cadence `every` (a re-check, never a decision: the verdict is the condition).
/// `pace` is the event that makes waiting pointless (the daemon exited): it ends the wait at once.
package func waitUntil(_ what: String, seconds: Double = 60, every cadence: Int32 = 25, pace: OnceEvent? = nil,
               detail: () -> String = { "" }, _ condition: () throws -> Bool) throws {
    let deadline = Deadline(seconds, for: what)
    // A descriptor that never becomes readable, for the cadence when no event ends the wait.
    let idle = pace ?? OnceEvent()
    while true {
        if try condition() { return }
        if let pace, pace.hasFired {
            if try condition() { return }
            throw WaitTimedOut(description: "the process exited while waiting for \(what)" + { let d = detail(); return d.isEmpty ? "" : ":\n\(d)" }())
        }
        if deadline.hasPassed { throw deadline.failure(detail()) }
        waitReadable([idle.readEnd], until: deadline, cap: cadence)
    }
}

/// The async form of `waitUntil`: holds no thread between questions (a Dispatch timer resumes it).
package func waitUntil(_ what: String, seconds: Double = 60, every cadence: Int = 25,
               detail: () -> String = { "" }, _ condition: () async throws -> Bool) async throws {
    let deadline = Deadline(seconds, for: what)
    while true {
        if try await condition() { return }
        if deadline.hasPassed { throw deadline.failure(detail()) }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(cadence)) { continuation.resume() }
        }
    }
}

/// A loopback TCP port the kernel gave this test, bound and never listened on:
/// a connection to it is refused, and no other test or daemon can take it while
/// this value lives (unlike a port that was free a moment ago).
package final class UnreachablePort: Sendable {
    private let fd: Int32
    package let port: Int

    package init() {
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
package func unreachablePort() -> Int {
    let reserved = UnreachablePort()
    UnreachablePort.held.withLock { $0.append(reserved) }
    return reserved.port
}

extension UnreachablePort {
    package static let held = Mutex<[UnreachablePort]>([])
}
