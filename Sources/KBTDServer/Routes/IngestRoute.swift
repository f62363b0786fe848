import Foundation
import Hummingbird
import KBTDCompression
import KBTDCore
import KBTDStore

/// `POST /v1/batches` (behind `RateLimitMiddleware` and `IngestAuthMiddleware`):
/// check the headers, inflate while the body streams in (caps enforced as
/// bytes arrive), validate and count in one pass, and answer only once the writer
/// has committed the batch.
struct IngestRoute: Sendable {
    let writer: GroupCommitWriter
    let settings: SettingsBox
    let metrics: ServerMetrics
    let sourceWeights: SourceWeights
    let keyGate: KeyGate

    /// Refusals (400, 413, 415, 503) are thrown as `JSONRefusal`s, which render themselves.
    func handle(_ request: Request, context: KBTDRequestContext) async throws(JSONRefusal) -> Response {
        let current = settings.current
        let limits = current.limits
        let json: [UInt8]
        do {
            json = try await Self.readJSON(request, limits: limits)
        } catch {
            metrics.batch(.rejected)
            throw error
        }

        let rules = FieldRules(maxSamples: limits.maxSamplesPerBatch)
        let now = Date().timeIntervalSince1970
        var batch: CountedBatch
        do {
            batch = try BatchIntake.count(json: json, now: now, rules: rules)
        } catch {
            metrics.batch(.rejected)
            throw JSONRefusal(error, "invalid batch")
        }
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
            throw JSONRefusal(status: .serviceUnavailable, error: "unavailable", detail: (error as? WriteError)?.publicReason
                              ?? "the database is unavailable; retry later", retryAfter: limits.retryAfterSeconds)
        }
        switch outcome {
        case .duplicate:
            metrics.batch(.duplicate)
            return JSONResponse.make(.ok, .object([
                ("batch_id", .string(batch.batchID)), ("duplicate", .bool(true)),
                ("accepted", .int(0)), ("rejected", .int(0)),
            ]))
        case .stored:
            metrics.batch(.stored)
            metrics.samplesAccepted.increment(by: Int64(batch.accepted))
            return JSONResponse.make(.accepted, Self.receipt(batch))
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

    /// Checks the content type and encoding, then reads and inflates the body
    /// while it streams in, enforcing both size caps as bytes arrive (a gzip body
    /// of up to 256 KiB is held and inflated in one call at its end, `BodyInflater`);
    /// a refused body (400, 413, 415) is a `JSONRefusal`.
    static func readJSON(_ request: Request, limits: ServerSettings.Limits) async throws(JSONRefusal) -> [UInt8] {
        if let contentType = request.headers[.contentType] {
            let mediaType = contentType.split(separator: ";", maxSplits: 1).first.map {
                $0.trimmingCharacters(in: .whitespaces).lowercased()
            } ?? ""
            guard mediaType == "application/json" else {
                throw JSONRefusal(status: .unsupportedMediaType, error: "unsupported content type",
                                  detail: "Content-Type must be application/json, got \(contentType.prefix(100))", field: "Content-Type")
            }
        }
        let encodings = request.headers[values: .contentEncoding]
        guard encodings.count <= 1, let coding = ContentCoding(headerValue: encodings.first) else {
            throw JSONRefusal(status: .unsupportedMediaType, error: "unsupported content encoding",
                              detail: "Content-Encoding must be gzip, deflate or none, got \(encodings.joined(separator: ", ").prefix(100))",
                              field: "Content-Encoding")
        }
        if let declared = request.headers[.contentLength].flatMap(Int.init), declared > limits.maxCompressedBytes {
            throw .tooLarge("body is \(declared) bytes; the limit is \(limits.maxCompressedBytes) bytes on the wire")
        }

        let inflater = BodyInflater(
            coding: coding, maxOutput: coding == .identity ? limits.maxCompressedBytes : limits.maxDecompressedBytes)
        var received = 0
        do {
            for try await chunk in request.body {
                received += chunk.readableBytes
                guard received <= limits.maxCompressedBytes else {
                    throw JSONRefusal.tooLarge("body exceeds \(limits.maxCompressedBytes) bytes on the wire")
                }
                try inflater.feed(chunk.readableBytesView)
            }
        } catch let refusal as JSONRefusal {
            throw refusal
        } catch let error as InflateError {
            throw .inflate(error, limits: limits)
        } catch {
            throw JSONRefusal(status: .badRequest, error: "unreadable body", detail: "\(error)")
        }
        do {
            return try inflater.finish()
        } catch {
            throw .inflate(error, limits: limits)
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
