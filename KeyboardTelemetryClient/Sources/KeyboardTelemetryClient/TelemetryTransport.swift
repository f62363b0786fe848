import Foundation

/// One HTTP request the client wants sent.
public struct TransportRequest: Sendable {
    /// `GET` or `POST`.
    public var method: String
    /// The full URL, query included.
    public var url: URL
    /// Header names as the client writes them (`Content-Encoding`, `If-None-Match`, ...).
    public var headers: [String: String]
    /// The bytes to send (the gzip batch for a `POST`).
    public var body: Data?
    /// The file holding `body` (a batch's queue file), for transports that upload from a file.
    public var bodyFile: URL?
    /// Seconds before the attempt counts as failed.
    public var timeout: TimeInterval

    /// A request; `timeout` in seconds.
    public init(method: String, url: URL, headers: [String: String] = [:], body: Data? = nil, bodyFile: URL? = nil,
                timeout: TimeInterval = 30) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.bodyFile = bodyFile
        self.timeout = timeout
    }
}

/// One HTTP response: the status, the headers (looked up case-insensitively) and the body.
public struct TransportResponse: Sendable {
    /// The HTTP status code.
    public var status: Int
    /// Header names lower-cased.
    public var headers: [String: String]
    /// The response body.
    public var body: Data

    /// A response; header names are lower-cased.
    public init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
        self.body = body
    }

    /// A header's value, whatever the case of its name.
    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// Sends HTTP requests for the client. `URLSessionTransport` is the real one;
/// wrap it to add rate limits, tracing or fault injection. Throwing means no
/// HTTP answer arrived (connection refused or dropped, timeout): the client retries.
public protocol TelemetryTransport: Sendable {
    func send(_ request: TransportRequest) async throws -> TransportResponse
}
