import Foundation
import KeyboardTelemetryClient

/// The real `URLSessionTransport`, with every request and answer written down
/// (a tap, not a double: the daemon still answers).
package final class RecordingTransport: TelemetryTransport, @unchecked Sendable {  // guarded by `lock`
    package struct Exchange {
        package var request: TransportRequest
        package var status: Int?
        package var responseHeaders: [String: String]
    }

    private let inner: any TelemetryTransport
    private let lock = NSLock()
    private var log: [Exchange] = []
    private var started = 0

    package init(_ inner: any TelemetryTransport = URLSessionTransport()) { self.inner = inner }

    package func send(_ request: TransportRequest) async throws -> TransportResponse {
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

    package var exchanges: [Exchange] { lock.withLock { log } }
    package var requestsStarted: Int { lock.withLock { started } }
    /// Requests that got an HTTP answer.
    package var requestsAnswered: Int { lock.withLock { log.filter { $0.status != nil }.count } }
}

/// Collects the client's log lines.
package final class LogRecorder: @unchecked Sendable {  // guarded by `lock`
    package init() {}
    private let lock = NSLock()
    private var lines: [(TelemetryLogLevel, String)] = []

    package var logger: TelemetryLogger {
        TelemetryLogger(minimumLevel: .debug) { level, message in
            self.lock.withLock { self.lines.append((level, message)) }
        }
    }

    package func messages(atLeast level: TelemetryLogLevel) -> [String] {
        lock.withLock { lines.filter { $0.0 >= level }.map(\.1) }
    }
}
