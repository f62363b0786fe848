import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The transport over `URLSession`, with HTTP caching turned off: the client
/// does its own revalidation with `If-None-Match` and must see the 304.
public final class URLSessionTransport: TelemetryTransport, @unchecked Sendable {  // URLSession is thread-safe
    private let session: URLSession

    /// An ephemeral session without a URL cache or cookies; `maxConnectionsPerHost` bounds parallel requests.
    public init(maxConnectionsPerHost: Int = 4) {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpMaximumConnectionsPerHost = maxConnectionsPerHost
        session = URLSession(configuration: configuration)
    }

    /// Uses a session you configured (set its `urlCache` to nil, or 304s turn into cached 200s).
    public init(session: URLSession) {
        self.session = session
    }

    deinit { session.finishTasksAndInvalidate() }

    /// Sends `request`; throws when no HTTP answer arrives (connection refused or dropped, timeout, cancellation).
    ///
    /// Built on `dataTask(with:completionHandler:)` rather than `data(for:)`:
    /// on Linux, swift-corelibs-foundation's `data(for:)` cancels its task
    /// synchronously from the cancellation handler (`URLSessionTask.cancel`
    /// waits on the session's queue while Swift holds the cancelled task's
    /// status lock), and the session's queue, resuming the same task's
    /// continuation, waits on that lock: a deadlock seen under load. Here the
    /// handler only hands the cancel to another queue and never waits.
    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var urlRequest = URLRequest(url: request.url, cachePolicy: .reloadIgnoringLocalCacheData,
                                    timeoutInterval: request.timeout)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        urlRequest.httpBody = request.body
        let pending = PendingTask()
        let (data, response) = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<(Data, URLResponse), any Error>) in
                let task = session.dataTask(with: urlRequest) { data, response, error in
                    if let data, let response {
                        continuation.resume(returning: (data, response))
                    } else {
                        continuation.resume(throwing: error ?? URLError(.badServerResponse))
                    }
                }
                pending.start(task)
            }
        } onCancel: {
            pending.cancel()
        }
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String { headers[name] = "\(value)" }
        }
        return TransportResponse(status: http.statusCode, headers: headers, body: data)
    }
}

/// The data task of one `send`, and whether it was cancelled before it
/// started. Cancelling never blocks the caller: `URLSessionTask.cancel` runs
/// on a global queue.
private final class PendingTask: @unchecked Sendable {  // every access goes through `state`
    private struct State {
        var task: URLSessionDataTask?
        var cancelled = false
    }
    private let state = Locked(State())

    /// Resumes `task`, or cancels it at once when the caller was cancelled first.
    func start(_ task: URLSessionDataTask) {
        let cancelled = state.withLock { state -> Bool in
            state.task = task
            return state.cancelled
        }
        task.resume()
        if cancelled { Self.cancelLater(task) }
    }

    func cancel() {
        let task = state.withLock { state -> URLSessionDataTask? in
            state.cancelled = true
            return state.task
        }
        if let task { Self.cancelLater(task) }
    }

    private static func cancelLater(_ task: URLSessionDataTask) {
        let unchecked = UncheckedTask(task: task)
        DispatchQueue.global().async { unchecked.task.cancel() }
    }

    /// `URLSessionTask` is thread-safe but not declared `Sendable` on Linux.
    private struct UncheckedTask: @unchecked Sendable {
        let task: URLSessionDataTask
    }
}
