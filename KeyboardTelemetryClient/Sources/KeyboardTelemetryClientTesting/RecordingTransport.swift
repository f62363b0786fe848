import Foundation
import KeyboardTelemetryClient

/// The real `URLSessionTransport`, with every request and answer written down
/// (a tap, not a double: the daemon still answers).
public final class RecordingTransport: TelemetryTransport, @unchecked Sendable {  // guarded by `lock`
    public struct Exchange {
        public var request: TransportRequest
        public var status: Int?
        public var responseHeaders: [String: String]
    }

    private let inner: any TelemetryTransport
    private let lock = NSLock()
    private var log: [Exchange] = []
    private var started = 0

    public init(_ inner: any TelemetryTransport = URLSessionTransport()) { self.inner = inner }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        let index = lock.withLock { () -> Int in
            started += 1
            log.append(Exchange(request: request, status: nil, responseHeaders: [:]))
            return log.count - 1
        }
        let response = try await inner.send(request)
        lock.withLock {
            log[index].status = response.status
            log[index].responseHeaders = response.headers
        }
        return response
    }

    public var exchanges: [Exchange] { lock.withLock { log } }
    public var requestsStarted: Int { lock.withLock { started } }
    /// Requests that got an HTTP answer.
    public var requestsAnswered: Int { lock.withLock { log.filter { $0.status != nil }.count } }
}

/// Collects the client's log lines.
public final class LogRecorder: @unchecked Sendable {  // guarded by `lock`
    public init() {}
    private let lock = NSLock()
    private var lines: [(TelemetryLogLevel, String)] = []

    public var logger: TelemetryLogger {
        TelemetryLogger(minimumLevel: .debug) { level, message in
            self.lock.withLock { self.lines.append((level, message)) }
        }
    }

    public func messages(atLeast level: TelemetryLogLevel) -> [String] {
        lock.withLock { lines.filter { $0.0 >= level }.map(\.1) }
    }
}
