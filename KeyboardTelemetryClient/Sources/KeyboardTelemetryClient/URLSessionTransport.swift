import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The transport over `URLSession`, with HTTP caching turned off: the client
/// does its own revalidation with `If-None-Match` and must see the 304.
public final class URLSessionTransport: TelemetryTransport, @unchecked Sendable {  // URLSession is thread-safe
    private let session: URLSession

    /// An ephemeral session without a URL cache or cookies, on the networks `network` allows;
    /// `maxConnectionsPerHost` bounds parallel requests.
    public init(maxConnectionsPerHost: Int = 4, network: NetworkPolicy = NetworkPolicy()) {
        let configuration = URLSessionConfiguration.ephemeral
        network.apply(to: configuration)
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
    /// Built on `dataTask(with:completionHandler:)`, bridged to `async` with a checked
    /// continuation, rather than on `data(for:)` (which also needs iOS 15):
    /// on Linux, swift-corelibs-foundation's `data(for:)` cancels its task
    /// synchronously from the cancellation handler (`URLSessionTask.cancel`
    /// waits on the session's queue while Swift holds the cancelled task's
    /// status lock), and the session's queue, resuming the same task's
    /// continuation, waits on that lock: a deadlock seen under load. Here the
    /// handler only hands the cancel to another queue and never waits.
    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var urlRequest = URLRequest(request)
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
        return try TransportResponse(response, body: data)
    }
}

extension URLRequest {
    /// `request` for `URLSession`, bypassing its cache; the body is the caller's to attach.
    init(_ request: TransportRequest) {
        self.init(url: request.url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: request.timeout)
        httpMethod = request.method
        for (name, value) in request.headers { setValue(value, forHTTPHeaderField: name) }
    }
}

extension TransportResponse {
    /// The status, headers and body of an HTTP answer; throws for anything that is not one.
    init(_ response: URLResponse?, body: Data) throws {
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String { headers[name] = "\(value)" }
        }
        self.init(status: http.statusCode, headers: headers, body: body)
    }
}

/// The task of one `send`, and whether it was cancelled before it
/// started. Cancelling never blocks the caller: `URLSessionTask.cancel` runs
/// on a global queue.
final class PendingTask: @unchecked Sendable {  // every access goes through `state`
    private struct State {
        var task: URLSessionTask?
        var cancelled = false
    }
    private let state = Locked(State())

    /// Resumes `task`, or cancels it at once when the caller was cancelled first.
    func start(_ task: URLSessionTask) {
        let cancelled = state.withLock { state -> Bool in
            state.task = task
            return state.cancelled
        }
        task.resume()
        if cancelled { Self.cancelLater(task) }
    }

    func cancel() {
        let task = state.withLock { state -> URLSessionTask? in
            state.cancelled = true
            return state.task
        }
        if let task { Self.cancelLater(task) }
    }

    private static func cancelLater(_ task: URLSessionTask) {
        let unchecked = UncheckedTask(task: task)
        DispatchQueue.global().async { unchecked.task.cancel() }
    }

    /// `URLSessionTask` is thread-safe but not declared `Sendable` on Linux.
    private struct UncheckedTask: @unchecked Sendable {
        let task: URLSessionTask
    }
}
