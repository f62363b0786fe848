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
    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        var urlRequest = URLRequest(url: request.url, cachePolicy: .reloadIgnoringLocalCacheData,
                                    timeoutInterval: request.timeout)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        urlRequest.httpBody = request.body
        let (data, response) = try await session.data(for: urlRequest)
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String { headers[name] = "\(value)" }
        }
        return TransportResponse(status: http.statusCode, headers: headers, body: data)
    }
}
