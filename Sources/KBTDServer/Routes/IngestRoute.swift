import Foundation
import Hummingbird
import KBTDCompression
import KBTDCore
import KBTDStore

/// `POST /v1/batches` (behind `RateLimitMiddleware` and `IngestAuthMiddleware`):
/// check the headers, inflate while the body streams in (caps enforced as
/// bytes arrive), validate, reduce to counts, and answer only once the writer
/// has committed the batch.
struct IngestRoute: Sendable {
    let writer: GroupCommitWriter
    let settings: SettingsBox
    let metrics: ServerMetrics
    let sourceWeights: SourceWeights
    let keyGate: KeyGate

    func handle(_ request: Request, context: KBTDRequestContext) async -> Response {
        let current = settings.current
        let limits = current.limits
        if let contentType = request.headers[.contentType] {
            let mediaType = contentType.split(separator: ";", maxSplits: 1).first.map {
                $0.trimmingCharacters(in: .whitespaces).lowercased()
            } ?? ""
            guard mediaType == "application/json" else {
                return reject(.unsupportedMediaType, "unsupported content type",
                              detail: "Content-Type must be application/json, got \(contentType.prefix(100))", field: "Content-Type")
            }
        }
        let encodings = request.headers[values: .contentEncoding]
        guard encodings.count <= 1, let coding = ContentCoding(headerValue: encodings.first) else {
            return reject(.unsupportedMediaType, "unsupported content encoding",
                          detail: "Content-Encoding must be gzip, deflate or none, got \(encodings.joined(separator: ", ").prefix(100))",
                          field: "Content-Encoding")
        }
        if let declared = request.headers[.contentLength].flatMap(Int.init), declared > limits.maxCompressedBytes {
            return tooLarge("body is \(declared) bytes; the limit is \(limits.maxCompressedBytes) bytes on the wire")
        }

        let inflater = StreamingInflater(
            coding: coding, maxOutput: coding == .identity ? limits.maxCompressedBytes : limits.maxDecompressedBytes)
        var received = 0
        do {
            for try await chunk in request.body {
                received += chunk.readableBytes
                guard received <= limits.maxCompressedBytes else {
                    return tooLarge("body exceeds \(limits.maxCompressedBytes) bytes on the wire")
                }
                try inflater.feed(chunk.readableBytesView)
            }
        } catch let error as InflateError {
            return inflateFailure(error, limits: limits)
        } catch {
            return reject(.badRequest, "unreadable body", detail: "\(error)")
        }
        let json: [UInt8]
        do {
            json = try inflater.finish()
        } catch {
            return inflateFailure(error, limits: limits)
        }

        let validator = BatchValidator(maxSamples: limits.maxSamplesPerBatch)
        let now = Date().timeIntervalSince1970
        var batch: ValidatedBatch
        do {
            batch = try validator.validate(json: json, now: now)
        } catch {
            metrics.batch(.rejected)
            return JSONResponse.invalid(error, "invalid batch")
        }
        let source = SourceWeights.source(of: context, trusted: current.trustedPeers)
        for (refusal, count) in keyGate.screen(&batch, source: source, now: now) {
            metrics.keysRefused(refusal, count: count)
        }
        for fault in batch.rejected { metrics.samplesRejected(field: fault.field) }

        let outcome: WriteOutcome
        do {
            var pending = PendingBatch(batch, receivedAt: Int64(now))
            pending.source = source
            sourceWeights.weigh(&pending.delta, source: source, now: now)
            outcome = try await writer.submit(pending)
        } catch {
            metrics.batch(.unavailable)
            // The cause (an SQLite message, a file path) goes to the log, not to clients.
            return JSONResponse.error(.serviceUnavailable, "unavailable", detail: (error as? WriteError)?.publicReason
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
            metrics.samplesAccepted.increment(by: Int64(batch.samples.count))
            let errors: [JSONOutput] = batch.rejected.prefix(20).map { fault in
                .object([("index", .int(Int64(fault.index))), ("field", .string(fault.field)), ("reason", .string(fault.reason))])
            }
            return JSONResponse.make(.accepted, .object([
                ("batch_id", .string(batch.batchID)),
                ("accepted", .int(Int64(batch.samples.count))),
                ("rejected", .int(Int64(batch.rejected.count))),
                ("errors", .array(errors)),
            ]))
        }
    }

    private func reject(_ status: HTTPResponse.Status, _ error: String, detail: String, field: String? = nil) -> Response {
        metrics.batch(.rejected)
        return JSONResponse.error(status, error, detail: detail, field: field)
    }

    private func tooLarge(_ detail: String) -> Response {
        reject(.contentTooLarge, "body too large", detail: detail)
    }

    private func inflateFailure(_ error: InflateError, limits: ServerSettings.Limits) -> Response {
        if case .tooLarge = error {
            return tooLarge("decompressed body exceeds \(limits.maxDecompressedBytes) bytes")
        }
        return reject(.badRequest, "bad compressed stream", detail: error.description)
    }
}
