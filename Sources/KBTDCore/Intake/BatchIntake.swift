/// A batch's JSON bytes to a `ValidatedBatch` in one pass: no JSON tree, no dictionary per sample, no `String` per sample (language and
/// keyboard type are interned once per batch, numbers are read from the bytes).
///
/// The values are judged by `FieldRules`. Every decision and every message is
/// the one the reference tree parser and validator (`KBTDReference`, which the
/// fuzz harness and `IntakeOracleTests` compare it with) give: a syntax error
/// anywhere wins over any validation fault, batch-level checks run in the
/// reference's order whatever the key order in the document, then each
/// sample's checks in theirs.
///
///     let batch = try BatchIntake.validate(json: bytes, now: now, rules: FieldRules(maxSamples: 10_000))
///     let delta = AggregateDelta(batch: batch)
///
/// `count(json:now:rules:)` is the same pass, counting the accepted samples
/// per key as it goes instead of keeping them (what ingest runs).
public enum BatchIntake {
    /// Validates raw (inflated) JSON bytes with `rules`' limits; `now` is Unix seconds.
    public static func validate(json: [UInt8], now: Double, rules: FieldRules) throws(FieldError) -> ValidatedBatch {
        let result = json.withUnsafeBufferPointer { buffer -> Result<ValidatedBatch, FieldError> in
            do throws(FieldError) {
                return .success(try validate(buffer: buffer, now: now, rules: rules))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Validates raw (inflated) JSON bytes as `validate(json:now:rules:)` does
    /// (same decisions, same errors) and counts the accepted samples per key
    /// as they pass, without a `Sample` each: what ingest stores.
    public static func count(json: [UInt8], now: Double, rules: FieldRules) throws(FieldError) -> CountedBatch {
        let result = json.withUnsafeBufferPointer { buffer -> Result<CountedBatch, FieldError> in
            do throws(FieldError) {
                return .success(try count(buffer: buffer, now: now, rules: rules))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Counts the bytes in `buffer` (see `count(json:now:rules:)`).
    public static func count(buffer: UnsafeBufferPointer<UInt8>, now: Double, rules: FieldRules) throws(FieldError) -> CountedBatch {
        var scanner = IntakeScanner(bytes: buffer, rules: rules, now: now, counting: true)
        defer { scanner.scratch?.deallocate() }
        do {
            try scanner.scanDocument()
        } catch {
            throw FieldError(field: "", reason: "body is not valid JSON: \(error)")
        }
        return try scanner.finishCounted()
    }

    /// Validates the bytes in `buffer` (see `validate(json:now:rules:)`).
    public static func validate(buffer: UnsafeBufferPointer<UInt8>, now: Double, rules: FieldRules) throws(FieldError) -> ValidatedBatch {
        var scanner = IntakeScanner(bytes: buffer, rules: rules, now: now)
        defer { scanner.scratch?.deallocate() }
        do {
            try scanner.scanDocument()
        } catch {
            throw FieldError(field: "", reason: "body is not valid JSON: \(error)")
        }
        return try scanner.finish()
    }
}
