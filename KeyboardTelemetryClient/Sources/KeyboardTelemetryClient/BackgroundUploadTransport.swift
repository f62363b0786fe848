import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Uploads batches from their queue files (`TransportRequest.bodyFile`) through a background
/// `URLSession` (`uploadTask(with:fromFile:)`): an upload the system has begun finishes while the app
/// is suspended. Requests without a file (`GET /v1/heights`) go to `fallback`.
///
/// Kept thin on purpose, because exactly-once delivery already covers the rest: an upload that
/// completes while the app is suspended or after it was terminated answers nobody, its batch stays
/// queued, and the next launch sends it again under the same `batch_id`, which kbtd answers with
/// 200 `duplicate`. So the session needs no relaunch events and no
/// `application(_:handleEventsForBackgroundURLSession:completionHandler:)` wiring.
///
/// Apple platforms only in practice: on Linux the session is an ordinary one (it still uploads from
/// the file, which is what kbtd's own tests exercise).
/// Create one per identifier and keep it for the life of the process: two sessions must not share
/// an identifier. `TelemetryConfiguration.backgroundSessionIdentifier` makes the client create it.
public final class BackgroundUploadTransport: NSObject, TelemetryTransport, URLSessionDataDelegate,
    @unchecked Sendable  // `session` is set once in init; everything else goes through `exchanges`
{
    private struct Exchange {
        var continuation: CheckedContinuation<TransportResponse, any Error>
        var body = Data()
    }

    private let fallback: any TelemetryTransport
    private let exchanges = Locked([Int: Exchange]())
    private var session: URLSession?

    /// A background session named `identifier`, on the networks `network` allows.
    public init(identifier: String, network: NetworkPolicy = NetworkPolicy(), fallback: any TelemetryTransport) {
        self.fallback = fallback
        super.init()
        #if canImport(Darwin)
        let configuration = URLSessionConfiguration.background(withIdentifier: identifier)
        #else
        let configuration = URLSessionConfiguration.default  // no background sessions elsewhere: uploads from the file all the same
        #endif
        network.apply(to: configuration)
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        #if os(iOS)
        configuration.sessionSendsLaunchEvents = false  // see above: the next launch's retry is a duplicate
        #endif
        session = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
    }

    /// Uploads `request.bodyFile`; a request without one goes to the fallback transport.
    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        guard let file = request.bodyFile, let session else { return try await fallback.send(request) }
        let task = session.uploadTask(with: URLRequest(request), fromFile: file)
        let pending = PendingTask()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                exchanges.withLock { $0[task.taskIdentifier] = Exchange(continuation: continuation) }
                pending.start(task)
            }
        } onCancel: {
            pending.cancel()
        }
    }

    public func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        exchanges.withLock { $0[dataTask.taskIdentifier]?.body.append(data) }
    }

    public func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        // Nil for an upload an earlier launch started: its batch is still queued and is sent again.
        guard let exchange = exchanges.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let error {
            exchange.continuation.resume(throwing: error)
            return
        }
        do {
            exchange.continuation.resume(returning: try TransportResponse(task.response, body: exchange.body))
        } catch {
            exchange.continuation.resume(throwing: error)
        }
    }
}
