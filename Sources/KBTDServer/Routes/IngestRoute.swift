import Foundation
import Hummingbird
import KBTDCompression
import KBTDCore
import KBTDStore

/// `POST /v1/batches` (behind `RateLimitMiddleware` and `IngestAuthMiddleware`):
/// check the headers, inflate while the body streams in (caps enforced as
/// bytes arrive), validate and count in one pass, and answer only once the writer
/// has committed the batch.
///
/// The rules live here once, for both paths a batch can take: the router's (`handle`) and the
/// batch path's in the channel pipeline (`BatchIngestHandler`), which reads the body with the same
/// `BatchBody` and answers with the same `ingest(json:limits:context:)` and `rejected(_:)`.
struct IngestRoute: Sendable {
    let writer: GroupCommitWriter
    let settings: SettingsBox
    let metrics: ServerMetrics
    let sourceWeights: SourceWeights
    let keyGate: KeyGate

    func handle(_ request: Request, context: KBTDRequestContext) async -> Response {
        let limits = settings.current.limits
        let json: [UInt8]
        do {
            json = try await Self.readJSON(request, limits: limits)
        } catch {
            return rejected(error).response
        }
        return await ingest(json: json, limits: limits, context: context).response
    }

    /// A refused body (400, 413, 415), counted.
    func rejected(_ refusal: JSONRefusal) -> JSONAnswer {
        metrics.batch(.rejected)
        return refusal.answer
    }

    /// Validates, counts, screens and commits a whole body: 202 (200 for a duplicate) once the writer
    /// has committed it, 400 for a batch that breaks a rule, 503 when it cannot be stored. Counted.
    func ingest(json: [UInt8], limits: ServerSettings.Limits, context: KBTDRequestContext) async -> JSONAnswer {
        let rules = FieldRules(maxSamples: limits.maxSamplesPerBatch)
        let now = Date().timeIntervalSince1970
        var batch: CountedBatch
        do {
            batch = try BatchIntake.count(json: json, now: now, rules: rules)
        } catch {
            return rejected(JSONRefusal(error, "invalid batch"))
        }
        let current = settings.current
        let source = sourceWeights.source(of: context, trusted: current.trustedPeers)
        let group = sourceWeights.group(of: context)
        let (refusals, created) = keyGate.screen(&batch, source: source, group: group, now: now)
        for (refusal, count) in refusals {
            metrics.keysRefused(refusal, count: count)
        }
        for fault in batch.rejected { metrics.samplesRejected(field: fault.field) }

        let outcome: WriteOutcome
        do {
            var pending = PendingBatch(batch, receivedAt: Int64(now))
            pending.source = source
            if source != .trusted {
                pending.newKeys = created
                pending.ledger = sourceWeights.weigh(&pending.delta, source: source, group: group,
                                                     screen: batch.device.screen, now: now)
            }
            pending.delta.recordRelease(os: batch.device.os)
            pending.delta.recordDay(receivedAt: pending.receivedAt)
            outcome = try await writer.submit(pending)
        } catch {
            metrics.batch(.unavailable)
            // The cause (an SQLite message, a file path) goes to the log, not to clients.
            return JSONRefusal(status: .serviceUnavailable, error: "unavailable", detail: (error as? WriteError)?.publicReason
                               ?? "the database is unavailable; retry later", retryAfter: limits.retryAfterSeconds).answer
        }
        switch outcome {
        case .duplicate:
            metrics.batch(.duplicate)
            return JSONAnswer(.ok, Array(JSONOutput.object([
                ("batch_id", .string(batch.batchID)), ("duplicate", .bool(true)),
                ("accepted", .int(0)), ("rejected", .int(0)),
            ]).serialized().utf8))
        case .stored:
            metrics.batch(.stored)
            metrics.samplesAccepted.increment(by: Int64(batch.accepted))
            return JSONAnswer(.accepted, Array(Self.receipt(batch).serialized().utf8))
        }
    }

    /// The 202 body: the phone's receipt, with the first 20 rejected samples.
    static func receipt(_ batch: CountedBatch) -> JSONOutput {
        let errors: [JSONOutput] = batch.rejected.prefix(20).map { fault in
            .object([("index", .int(Int64(fault.index))), ("field", .string(fault.field)), ("reason", .string(fault.reason))])
        }
        return .object([
            ("batch_id", .string(batch.batchID)),
            ("accepted", .int(Int64(batch.accepted))),
            ("rejected", .int(Int64(batch.rejected.count))),
            ("errors", .array(errors)),
        ])
    }

    /// Reads a request's body with `BatchBody`: its headers checked, inflated as it streams in,
    /// both size caps enforced as bytes arrive; a refused body (400, 413, 415) is a `JSONRefusal`.
    static func readJSON(_ request: Request, limits: ServerSettings.Limits) async throws(JSONRefusal) -> [UInt8] {
        let body = try BatchBody(request.headers, limits: limits)
        do {
            for try await chunk in request.body {
                try body.feed(chunk)
            }
        } catch let refusal as JSONRefusal {
            throw refusal
        } catch {
            throw JSONRefusal(status: .badRequest, error: "unreadable body", detail: "\(error)")
        }
        return try body.finish()
    }
}

/// One batch's body as it arrives, on either path: the content type and encoding are checked when
/// it is made (`Framing`: 415; a declared length over the wire cap, 413), each chunk is inflated as it
/// is fed (413 past either cap, 400 for a stream that does not inflate; a gzip body of up to 256 KiB is
/// held and inflated in one libdeflate call at its end, `BodyInflater`, with zlib's results and errors),
/// and `finish()` gives the JSON.
final class BatchBody {
    /// What the headers alone decide: the coding, or the refusal. Sendable, so a body can be read
    /// on another thread than the one that checked its headers (`HTTP2BatchHandler`).
    struct Framing: Sendable {
        let coding: ContentCoding
        let limits: ServerSettings.Limits

        init(_ headers: HTTPFields, limits: ServerSettings.Limits) throws(JSONRefusal) {
            if let contentType = headers[.contentType] {
                guard Self.isJSON(contentType) else {
                    throw JSONRefusal(status: .unsupportedMediaType, error: "unsupported content type",
                                      detail: "Content-Type must be application/json, got \(contentType.prefix(100))", field: "Content-Type")
                }
            }
            let encodings = headers[values: .contentEncoding]
            guard encodings.count <= 1, let coding = ContentCoding(headerValue: encodings.first) else {
                throw JSONRefusal(status: .unsupportedMediaType, error: "unsupported content encoding",
                                  detail: "Content-Encoding must be gzip, deflate or none, got \(encodings.joined(separator: ", ").prefix(100))",
                                  field: "Content-Encoding")
            }
            if let declared = headers[.contentLength].flatMap(Int.init), declared > limits.maxCompressedBytes {
                throw .tooLarge("body is \(declared) bytes; the limit is \(limits.maxCompressedBytes) bytes on the wire")
            }
            self.coding = coding
            self.limits = limits
        }

        /// Whether a `Content-Type` names `application/json` (parameters after `;` allowed, case and
        /// surrounding blanks ignored). An ASCII value is read as bytes: Foundation's trimming bridges
        /// to `NSString`, about 3 µs a batch on the batch path; any other value takes that reading, whose
        /// results the bytes' one repeats (`.whitespaces` is space and tab in ASCII).
        static func isJSON(_ contentType: String) -> Bool {
            let all = contentType.utf8
            if let first = all.first, first != UInt8(ascii: ";"), all.allSatisfy({ $0 < 0x80 }) {
                let utf8 = all[..<(all.firstIndex(of: UInt8(ascii: ";")) ?? all.endIndex)]
                let blank: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
                guard let start = utf8.firstIndex(where: { !blank($0) }), let last = utf8.lastIndex(where: { !blank($0) }) else {
                    return false
                }
                let json = "application/json".utf8
                let trimmed = utf8[start...last]
                return trimmed.count == json.count
                    && zip(trimmed, json).allSatisfy { byte, expected in
                        (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte) == expected
                    }
            }
            let mediaType = contentType.split(separator: ";", maxSplits: 1).first.map {
                $0.trimmingCharacters(in: .whitespaces).lowercased()
            } ?? ""
            return mediaType == "application/json"
        }

        /// The 413 for a body past `max_compressed_bytes` on the wire.
        var overWire: JSONRefusal { .tooLarge("body exceeds \(limits.maxCompressedBytes) bytes on the wire") }
    }

    private let framing: Framing
    private let inflater: BodyInflater
    private var received = 0

    init(_ framing: Framing) {
        self.framing = framing
        let limits = framing.limits
        inflater = BodyInflater(
            coding: framing.coding, maxOutput: framing.coding == .identity ? limits.maxCompressedBytes : limits.maxDecompressedBytes)
    }

    convenience init(_ headers: HTTPFields, limits: ServerSettings.Limits) throws(JSONRefusal) {
        self.init(try Framing(headers, limits: limits))
    }

    func feed(_ chunk: ByteBuffer) throws(JSONRefusal) {
        received += chunk.readableBytes
        guard received <= framing.limits.maxCompressedBytes else { throw framing.overWire }
        do {
            try inflater.feed(chunk.readableBytesView)
        } catch {
            throw .inflate(error, limits: framing.limits)
        }
    }

    func finish() throws(JSONRefusal) -> [UInt8] {
        do {
            return try inflater.finish()
        } catch {
            throw .inflate(error, limits: framing.limits)
        }
    }
}

extension JSONRefusal {
    /// A body over a size cap (413).
    static func tooLarge(_ detail: String) -> JSONRefusal {
        JSONRefusal(status: .contentTooLarge, error: "body too large", detail: detail)
    }

    /// A compressed stream that does not inflate: 413 past the decompressed cap, else 400.
    static func inflate(_ error: InflateError, limits: ServerSettings.Limits) -> JSONRefusal {
        if case .tooLarge = error { return tooLarge("decompressed body exceeds \(limits.maxDecompressedBytes) bytes") }
        return JSONRefusal(status: .badRequest, error: "bad compressed stream", detail: error.description)
    }
}
