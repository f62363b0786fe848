import Foundation

/// What an answer to `POST /v1/batches` means for the batch.
enum DeliveryOutcome: Equatable, Sendable {
    /// 202: stored; the receipt's counts.
    case acknowledged(accepted: Int, rejected: Int)
    /// 200 `duplicate`: stored by an earlier attempt whose answer was lost.
    case duplicate
    /// Final 4xx (not 429): kbtd will never take this batch; drop it.
    case final(status: Int, reason: String)
    /// Try again later: network error, 429, 5xx, anything unexpected.
    /// `retryAfter` is the server's `Retry-After` in seconds, when it sent one with 429/503.
    case retry(reason: String, retryAfter: TimeInterval?)
}

/// The delivery rules of docs/http-api.md, and the client's backoff.
enum DeliveryPolicy {
    static func outcome(of response: TransportResponse, now: Date) -> DeliveryOutcome {
        let status = response.status
        switch status {
        case 202:
            let receipt = try? JSONDecoder().decode(Receipt.self, from: response.body)
            return .acknowledged(accepted: receipt?.accepted ?? 0, rejected: receipt?.rejected ?? 0)
        case 200, 201, 204:
            // 200 is kbtd's answer for a batch_id it already stored.
            return .duplicate
        case 429, 503:
            return .retry(reason: "HTTP \(status)", retryAfter: retryAfter(response.header("Retry-After"), now: now))
        case 400..<500:
            return .final(status: status, reason: errorSummary(response.body))
        default:
            return .retry(reason: "HTTP \(status)", retryAfter: nil)
        }
    }

    /// `Retry-After` as delay-seconds or an HTTP-date (RFC 9110 §10.2.3); `nil` when absent or unreadable.
    static func retryAfter(_ value: String?, now: Date) -> TimeInterval? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Int(value) { return seconds >= 0 ? TimeInterval(seconds) : nil }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: value) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }

    /// The delay before the next attempt after `failures` consecutive failures
    /// (1 = the first): exponential from `base`, capped at `max`, with "equal
    /// jitter" (a uniform draw from the upper half) so a fleet that failed
    /// together does not retry together. `unit` is a uniform draw in 0..<1.
    static func backoff(failures: Int, base: TimeInterval, max maximum: TimeInterval, unit: Double) -> TimeInterval {
        let exponent = Double(Swift.min(Swift.max(failures - 1, 0), 52))
        let ceiling = Swift.min(maximum, base * pow(2, exponent))
        return ceiling / 2 + ceiling / 2 * unit
    }

    /// The wait `Retry-After` asks for, capped, plus up to 10 % (at most one second)
    /// of jitter: never shorter than what the server asked for.
    static func retryAfterDelay(_ retryAfter: TimeInterval, cap: TimeInterval, unit: Double) -> TimeInterval {
        let asked = Swift.min(retryAfter, cap)
        return asked + Swift.min(asked * 0.1, 1) * unit
    }

    private struct Receipt: Decodable {
        var accepted: Int?
        var rejected: Int?
    }

    private struct ErrorBody: Decodable {
        var error: String?
        var detail: String?
    }

    private static func errorSummary(_ body: Data) -> String {
        if let error = try? JSONDecoder().decode(ErrorBody.self, from: body) {
            return [error.error, error.detail].compactMap { $0 }.joined(separator: ": ")
        }
        return String(decoding: body.prefix(200), as: UTF8.self)
    }
}
