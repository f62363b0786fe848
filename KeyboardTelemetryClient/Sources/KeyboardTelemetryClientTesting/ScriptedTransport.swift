import Foundation
import KeyboardTelemetryClient

/// A fake kbtd: every request is answered by a closure the test writes (or hangs until cancelled,
/// or throws like a dropped connection), and kept for the test to read.
///
/// ```swift
/// let transport = ScriptedTransport { request in ScriptedTransport.accept(request) }
/// ```
public final class ScriptedTransport: TelemetryTransport, @unchecked Sendable {  // guarded by `lock`
    private let answer: @Sendable (TransportRequest) async throws -> TransportResponse
    private let lock = NSLock()
    private var received: [TransportRequest] = []

    /// Answers each request with `answer`.
    public init(_ answer: @escaping @Sendable (TransportRequest) async throws -> TransportResponse) {
        self.answer = answer
    }

    public func send(_ request: TransportRequest) async throws -> TransportResponse {
        lock.withLock { received.append(request) }
        return try await answer(request)
    }

    /// Every request so far, in order.
    public var requests: [TransportRequest] { lock.withLock { received } }
    /// The batches posted so far (retries included), decoded.
    public var batches: [SentBatch] { requests.compactMap { try? SentBatch(request: $0) } }

    /// kbtd's 202 for a batch, counting every sample as accepted; 404 for anything else.
    public static func accept(_ request: TransportRequest) -> TransportResponse {
        guard let batch = try? SentBatch(request: request) else { return TransportResponse(status: 404) }
        return TransportResponse(status: 202, body: Data(#"{"batch_id":"\#(batch.batchID)","accepted":\#(batch.sampleTimes.count),"rejected":0}"#.utf8))
    }

    /// Waits until the calling task is cancelled, then throws `CancellationError`: a server that never answers.
    public static func hang() async throws -> Never {
        while true { try await Task.sleep(nanoseconds: 1_000_000_000) }
    }

    /// What a refused connection looks like to the client.
    public struct ConnectionRefused: Error {
        public init() {}
    }
}

/// One `POST /v1/batches` body, gunzipped and read.
public struct SentBatch: Sendable, Equatable {
    /// `batch_id`.
    public var batchID: String
    /// `device.model`.
    public var model: String
    /// Each sample's `t`, in order.
    public var sampleTimes: [Double]
    /// The file the body was read from (`TransportRequest.bodyFile`), if the client named one.
    public var file: URL?

    /// Reads a request's body; throws when it is not a gzip batch.
    public init(request: TransportRequest) throws {
        guard request.method == "POST", let body = request.body else { throw NotABatch() }
        let json = try Gunzip.decompress(body)
        guard let document = try JSONSerialization.jsonObject(with: json) as? [String: Any],
              let id = document["batch_id"] as? String, let device = document["device"] as? [String: Any],
              let model = device["model"] as? String, let samples = document["samples"] as? [[String: Any]] else {
            throw NotABatch()
        }
        batchID = id
        self.model = model
        sampleTimes = samples.compactMap { ($0["t"] as? NSNumber)?.doubleValue }
        file = request.bodyFile
    }

    struct NotABatch: Error {}
}
