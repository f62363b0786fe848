import Foundation
import KeyboardTelemetryClient

/// The real `URLSessionTransport`, with every request and answer written down
/// (a tap, not a double: the daemon still answers).
final class RecordingTransport: TelemetryTransport, @unchecked Sendable {  // guarded by `lock`
    struct Exchange {
        var request: TransportRequest
        var status: Int?
        var responseHeaders: [String: String]
    }

    private let inner: any TelemetryTransport
    private let lock = NSLock()
    private var log: [Exchange] = []
    private var started = 0

    init(_ inner: any TelemetryTransport = URLSessionTransport()) { self.inner = inner }

    func send(_ request: TransportRequest) async throws -> TransportResponse {
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

    var exchanges: [Exchange] { lock.withLock { log } }
    var requestsStarted: Int { lock.withLock { started } }
    /// Requests that got an HTTP answer.
    var requestsAnswered: Int { lock.withLock { log.filter { $0.status != nil }.count } }
}

/// Collects the client's log lines.
final class LogRecorder: @unchecked Sendable {  // guarded by `lock`
    private let lock = NSLock()
    private var lines: [(TelemetryLogLevel, String)] = []

    var logger: TelemetryLogger {
        TelemetryLogger(minimumLevel: .debug) { level, message in
            self.lock.withLock { self.lines.append((level, message)) }
        }
    }

    func messages(atLeast level: TelemetryLogLevel) -> [String] {
        lock.withLock { lines.filter { $0.0 >= level }.map(\.1) }
    }
}
