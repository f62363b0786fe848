import KBTDCore

/// The differential oracle: `BatchIntake`, both its counting pass (what the
/// daemon runs) and its materialising one, against the reference it replaced, `JSONParser` + `BatchValidator.validate(document:now:)`
/// + `AggregateDelta.sampleBySample` (against the grouped `AggregateDelta(batch:)`). Only the fuzz harness and the replay tests call it.
///
///     if let difference = IntakeOracle.difference(json: bytes, now: now, rules: rules) { fatalError(difference) }
public enum IntakeOracle {
    /// Nil when both paths accept alike (same batch id, device, samples bit for
    /// bit, rejections and counts) or reject alike (same field and reason);
    /// else what differs.
    public static func difference(json: [UInt8], now: Double, rules: FieldRules) -> String? {
        let reference: Result<ValidatedBatch, FieldError>
        do {
            reference = .success(try BatchValidator(rules: rules).validate(json: json, now: now))
        } catch {
            reference = .failure(error)
        }
        let intake: Result<ValidatedBatch, FieldError>
        do {
            intake = .success(try BatchIntake.validate(json: json, now: now, rules: rules))
        } catch {
            intake = .failure(error)
        }
        let counted: Result<CountedBatch, FieldError>
        do {
            counted = .success(try BatchIntake.count(json: json, now: now, rules: rules))
        } catch {
            counted = .failure(error)
        }
        switch (reference, intake) {
        case (.failure(let expected), .failure(let got)):
            if expected != got { return "error: reference \"\(expected)\", intake \"\(got)\"" }
        case (.failure(let expected), .success):
            return "reference rejects (\"\(expected)\"), intake accepts"
        case (.success, .failure(let got)):
            return "reference accepts, intake rejects (\"\(got)\")"
        case (.success(let expected), .success(let got)):
            if let difference = difference(expected, got) { return difference }
        }
        switch (reference, counted) {
        case (.failure(let expected), .failure(let got)):
            return expected == got ? nil : "error: reference \"\(expected)\", counting intake \"\(got)\""
        case (.failure(let expected), .success):
            return "reference rejects (\"\(expected)\"), counting intake accepts"
        case (.success, .failure(let got)):
            return "reference accepts, counting intake rejects (\"\(got)\")"
        case (.success(let expected), .success(let got)):
            return difference(expected, counted: got)
        }
    }

    /// The counting intake against the reference: the same batch id, device,
    /// rejections and number of accepted samples, and the reference's
    /// sample-by-sample counts; its keys are those of the accepted samples, in order of first appearance.
    public static func difference(_ expected: ValidatedBatch, counted got: CountedBatch) -> String? {
        guard expected.batchID == got.batchID else { return "counting batch_id: \(expected.batchID) vs \(got.batchID)" }
        guard expected.device == got.device else { return "counting device: \(expected.device) vs \(got.device)" }
        guard expected.rejected == got.rejected else { return "counting rejected: \(expected.rejected) vs \(got.rejected)" }
        guard expected.samples.count == got.accepted else { return "counting accepted: \(expected.samples.count) vs \(got.accepted)" }
        var keys: [SeriesKey] = []
        for sample in expected.samples {
            let key = SeriesKey(model: expected.device.model, osMajor: expected.device.osMajor, language: sample.language,
                                orientation: sample.orientation, keyboardType: sample.keyboardType)
            if !keys.contains(key) { keys.append(key) }
        }
        guard keys == got.keys else { return "counting keys: \(keys) vs \(got.keys)" }
        guard AggregateDelta.sampleBySample(expected) == got.delta() else { return "counting aggregates differ" }
        return nil
    }

    static func difference(_ expected: ValidatedBatch, _ got: ValidatedBatch) -> String? {
        guard expected.batchID == got.batchID else { return "batch_id: \(expected.batchID) vs \(got.batchID)" }
        guard expected.device == got.device else { return "device: \(expected.device) vs \(got.device)" }
        guard expected.rejected == got.rejected else { return "rejected: \(expected.rejected) vs \(got.rejected)" }
        guard expected.samples.count == got.samples.count else {
            return "accepted: \(expected.samples.count) vs \(got.samples.count)"
        }
        for (i, (a, b)) in zip(expected.samples, got.samples).enumerated() where !identical(a, b) {
            return "accepted sample \(i): \(a) vs \(b)"
        }
        guard AggregateDelta.sampleBySample(expected) == AggregateDelta(batch: got) else { return "aggregates differ" }
        return nil
    }

    /// Equal, with every number equal bit for bit (so 0 and -0 differ).
    static func identical(_ a: Sample, _ b: Sample) -> Bool {
        a.t.bitPattern == b.t.bitPattern && a.event == b.event && a.language == b.language
            && a.orientation == b.orientation && a.keyboardType == b.keyboardType
            && a.height.bitPattern == b.height.bitPattern && a.accessoryHeight.bitPattern == b.accessoryHeight.bitPattern
            && a.safeAreaBottom.bitPattern == b.safeAreaBottom.bitPattern && a.duration.bitPattern == b.duration.bitPattern
            && a.curve == b.curve && a.coldStartMs?.bitPattern == b.coldStartMs?.bitPattern
            && a.preloaded == b.preloaded && a.floating == b.floating && a.hardwareKeyboard == b.hardwareKeyboard
    }
}
