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
/// h2 batch path's (`HTTP2FrameFront`, through `Front`), which reads the body with the same
/// `BatchBody` and answers with the same `ingest(json:limits:context:)` and `rejected(_:)`.
struct IngestRoute: Sendable {
    let writer: GroupCommitWriter
    let settings: SettingsBox
    let metrics: ServerMetrics
    let sourceWeights: SourceWeights
    let keyGate: KeyGate
    /// What bodies in flight may hold, on every path together.
    let bodies: BodyBudget

    func handle(_ request: Request, context: KBTDRequestContext) async -> Response {
        let limits = settings.current.limits
        let json: BatchJSON
        do {
            json = try await readJSON(request, limits: limits, context: context)
        } catch {
            return rejected(error).response
        }
        return await ingest(json, limits: limits, context: context).response
    }

    /// A body for a request from `context`'s client, its bytes held under that client's share of
    /// the `BodyBudget`.
    func body(_ framing: BatchBody.Framing, context: KBTDRequestContext) -> BatchBody {
        BatchBody(framing, lease: bodies.lease(network: context.clientNetwork, group: context.clientGroup))
    }

    /// A refused body (400, 413, 415), counted.
    func rejected(_ refusal: JSONRefusal) -> JSONAnswer {
        metrics.batch(.rejected)
        return refusal.answer
    }

    /// Validates, counts, screens and commits a whole body: 202 (200 for a duplicate) once the writer
    /// has committed it, 400 for a batch that breaks a rule, 503 when it cannot be stored. Counted.
    /// The body's share of the `BodyBudget` is held until the answer.
    func ingest(_ body: BatchJSON, limits: ServerSettings.Limits, context: KBTDRequestContext) async -> JSONAnswer {
        let answer = await ingest(json: body.bytes, limits: limits, context: context)
        withExtendedLifetime(body.lease) {}
        return answer
    }

    private func ingest(json: [UInt8], limits: ServerSettings.Limits, context: KBTDRequestContext) async -> JSONAnswer {
        let rules = FieldRules(maxSamples: limits.maxSamplesPerBatch)
        let now = Date().timeIntervalSince1970
        var batch: CountedBatch
        do {
            batch = try BatchIntake.count(json: json, now: now, rules: rules)
        } catch {
            var refusal = JSONRefusal(error, "invalid batch")
            // curl's `--data-binary @file.gz` without the header is a common slip.
            if let coding = ContentCoding.sniffed(json).map({ $0 == .gzip ? "gzip" : "deflate" }) {
                refusal.detail += " (the body looks \(coding)-compressed: send Content-Encoding: \(coding))"
            }
            return rejected(refusal)
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
            pending.delta.recordScreen(batch.device.screen)
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

    /// Reads a request's body with `BatchBody`: its headers checked, the wire cap and the budget
    /// enforced as bytes arrive, inflated once whole; a refused body (400, 413, 415, 503) is a `JSONRefusal`.
    func readJSON(_ request: Request, limits: ServerSettings.Limits, context: KBTDRequestContext) async throws(JSONRefusal) -> BatchJSON {
        let body = self.body(try BatchBody.Framing(request.headers, limits: limits), context: context)
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

/// One batch's body as it arrives, on every path (the router, the HTTP/1.1 batch path, h2 batch
/// streams): the content type and encoding are checked when it is made (`Framing`: 415; a declared
/// length over the wire cap, 413); each chunk is held as sent, under the client's share of the
/// `BodyBudget` (413 past `max_compressed_bytes`, 503 past the share); `finish()` inflates the whole
/// body at once (`BodyInflater.inflate`: one libdeflate call for a whole gzip member, else zlib; 413
/// past `max_decompressed_bytes`, 400 for a stream that does not inflate) and gives the JSON.
/// Holding the compressed bytes, not inflating as they arrive, is what bounds a body that never
/// ends: it holds at most what it sent.
final class BatchBody {
    /// What the headers alone decide: the coding, or the refusal. Sendable, so a body can be read
    /// on another thread than the one that checked its headers (`HTTP2FrameFront`).
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
    private let lease: BodyLease
    /// The body as sent (compressed), held until it has all arrived: a body that never ends holds
    /// only what it sent, never what that inflates to.
    private var held: [UInt8] = []
    private var received = 0

    /// A body that holds its bytes under `lease` (`IngestRoute.body`), refused with a 503 once
    /// the `BodyBudget` has no room for them.
    init(_ framing: Framing, lease: BodyLease) {
        self.framing = framing
        self.lease = lease
    }

    func feed(_ chunk: ByteBuffer) throws(JSONRefusal) {
        let count = chunk.readableBytes
        received += count
        guard received <= framing.limits.maxCompressedBytes else { throw framing.overWire }
        if held.count + count > held.capacity {
            // Grown in powers of two (as an array grows), and counted as allocated before the bytes are copied in.
            let needed = max(held.count + count, 4096)
            let capacity = min(1 << (Int.bitWidth - (needed - 1).leadingZeroBitCount), framing.limits.maxCompressedBytes)
            try hold(capacity)
            held.reserveCapacity(capacity)
        }
        held.append(contentsOf: chunk.readableBytesView)
    }

    /// The whole body, inflated (413 past `max_decompressed_bytes`, 400 for a stream that does not
    /// inflate), its lease now holding the JSON instead of the compressed bytes until the intake
    /// has counted it.
    func finish() throws(JSONRefusal) -> BatchJSON {
        // Without a coding the bytes held are the JSON, already counted.
        guard framing.coding != .identity else { return BatchJSON(bytes: held, lease: lease) }
        let json: [UInt8]
        do {
            json = try BodyInflater.inflate(held, coding: framing.coding, maxOutput: framing.limits.maxDecompressedBytes)
        } catch {
            throw .inflate(error, limits: framing.limits)
        }
        held = []
        try hold(json.capacity)
        return BatchJSON(bytes: json, lease: lease)
    }

    private func hold(_ bytes: Int) throws(JSONRefusal) {
        if let scope = lease.resize(to: bytes, limit: framing.limits.bodyBudgetBytes) {
            throw .busy(scope, limits: framing.limits)
        }
    }
}

/// A whole body's JSON and the share of the `BodyBudget` it holds, given back when the last copy
/// of this value is gone (the intake and the commit's task are done with the bytes).
struct BatchJSON: Sendable {
    let bytes: [UInt8]
    let lease: BodyLease
}

extension JSONRefusal {
    /// No room in the `BodyBudget` for a body's bytes (503 with `Retry-After`): the client network,
    /// its group or all clients together hold as much as they may; nothing already accepted is lost.
    static func busy(_ scope: BodyBudget.Scope, limits: ServerSettings.Limits) -> JSONRefusal {
        let whose = switch scope {
        case .client: "your network's share (a quarter of body_budget_bytes)"
        case .group: "your network group's share (half of body_budget_bytes)"
        case .total: "body_budget_bytes"
        }
        return JSONRefusal(status: .serviceUnavailable, error: "too many bodies in flight",
                           detail: "request bodies still arriving hold all of \(whose); retry later",
                           retryAfter: limits.retryAfterSeconds)
    }

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
