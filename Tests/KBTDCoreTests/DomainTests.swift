import Foundation
import KBTDCore
import Testing

@Suite("JSON parser")
struct JSONParserTests {
    @Test func parsesNestedDocument() throws {
        let value = try JSONParser.parse(Array(#"{"a":[1,-2.5e2,true,null,"x\u00e9\ud83d\ude00"],"b":{}}"#.utf8))
        #expect(value["a"] == .array([.number(1), .number(-250), .bool(true), .null, .string("xé😀")]))
        #expect(value["b"] == .object([:]))
    }

    @Test(arguments: [
        ("{\"a\":1,\"a\":2}", "duplicate key"),
        ("{\"a\":1} x", "unexpected data after"),
        ("{\"a\":NaN}", "unexpected character"),
        ("{\"a\":Infinity}", "unexpected character"),
        ("{\"a\":1e400}", "number out of range"),
        ("{\"a\":01}", "leading zero"),
        ("{\"a\":\"\u{01}\"}", "control character"),
        ("{\"a\":\"\\ud800\"}", "unpaired surrogate"),
        ("{\"a\":", "unexpected end of input"),
        ("", "unexpected end of input"),
        ("[1,]", "unexpected character"),
    ])
    func rejects(document: String, reason: String) {
        #expect {
            try JSONParser.parse(Array(document.utf8))
        } throws: { error in
            (error as? JSONParser.Error)?.reason.contains(reason) == true
        }
    }

    @Test func rejectsInvalidUTF8() {
        let bytes: [UInt8] = Array("{\"a\":\"".utf8) + [0xC3, 0x28] + Array("\"}".utf8)
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse(bytes) }
    }

    @Test func rejectsDeepNestingWithoutCrashing() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect {
            try JSONParser.parse(Array(deep.utf8))
        } throws: { error in
            (error as? JSONParser.Error)?.reason.contains("nesting deeper") == true
        }
    }
}

@Suite("Batch validation")
struct BatchValidationTests {
    let now = 1_763_719_198.0
    let validator = BatchValidator()

    func sample(_ overrides: [(String, JSONOutput)] = [], removing: [String] = []) -> JSONOutput {
        var members: [(String, JSONOutput)] = [
            ("t", .double(now)), ("event", .string("show")), ("language", .string("ja-JP")),
            ("orientation", .string("portrait")), ("height", .double(392)), ("accessory_height", .double(48)),
            ("safe_area_bottom", .double(34)), ("duration", .double(0.25)), ("curve", .int(7)),
        ]
        members.removeAll { removing.contains($0.0) }
        for (key, value) in overrides {
            members.removeAll { $0.0 == key }
            members.append((key, value))
        }
        return .object(members)
    }

    func validate(_ samples: [JSONOutput], model: JSONOutput = .string("iPhone17,1"), os: JSONOutput = .string("26.1"),
                  id: JSONOutput = .string("0F8FAD5B-D9CB-469F-A165-70867728950E")) throws -> ValidatedBatch {
        let body = JSONOutput.object([
            ("batch_id", id), ("device", .object([("model", model), ("os", os)])), ("samples", .array(samples)),
        ])
        return try validator.validate(json: Array(body.serialized().utf8), now: now)
    }

    @Test func acceptsTheDesignExample() throws {
        let batch = try validate([sample([("cold_start_ms", .double(412.5)), ("preloaded", .bool(false))])])
        #expect(batch.batchID == "0f8fad5b-d9cb-469f-a165-70867728950e")
        #expect(batch.device.osMajor == 26)
        #expect(batch.samples.count == 1 && batch.rejected.isEmpty)
        #expect(batch.samples[0].systemHeight == 344)
        #expect(batch.samples[0].keyboardType == "default")
    }

    @Test(arguments: [
        ("t", JSONOutput.double(1_763_719_198.0 - 31 * 86_400), "older than 30 days"),
        ("t", .double(1_763_719_198.0 + 2 * 86_400), "1 day in the future"),
        ("t", .string("1763719198"), "must be a number"),
        ("event", .string("appear"), "show, hide or change"),
        ("language", .string("ja JP"), "[A-Za-z0-9_-]"),
        ("language", .string(String(repeating: "a", count: 36)), "1-35"),
        ("orientation", .string("faceUp"), "portrait or landscape"),
        ("keyboard_type", .string("emoji"), "UIKeyboardType"),
        ("height", .double(2000.5), "between 0 and 2000"),
        ("height", .double(0), "greater than 0"),
        ("accessory_height", .double(400), "between 0 and height"),
        ("safe_area_bottom", .double(-1), "between 0 and height"),
        ("duration", .double(5.01), "between 0 and 5"),
        ("curve", .int(16), "integer between 0 and 15"),
        ("curve", .double(7.5), "integer between 0 and 15"),
        ("cold_start_ms", .double(0), "greater than 0"),
        ("cold_start_ms", .double(60_001), "at most 60000"),
        ("preloaded", .string("yes"), "must be a boolean"),
        ("floating", .int(1), "must be a boolean"),
    ])
    func rejectsOneSample(field: String, value: JSONOutput, reason: String) throws {
        let batch = try validate([sample(), sample([(field, value)]), sample()])
        #expect(batch.samples.count == 2)
        #expect(batch.rejected.count == 1)
        #expect(batch.rejected.first?.index == 1)
        #expect(batch.rejected.first?.field == field)
        #expect(batch.rejected.first?.reason.contains(reason) == true, "\(batch.rejected)")
    }

    @Test(arguments: ["t", "event", "language", "orientation", "height", "duration", "curve"])
    func requiresField(field: String) throws {
        let batch = try validate([sample(removing: [field])])
        #expect(batch.rejected == [SampleError(index: 0, field: field, reason: "is required")])
    }

    @Test func coldStartOnlyOnShow() throws {
        let batch = try validate([sample([("event", .string("change")), ("cold_start_ms", .double(300))])])
        #expect(batch.rejected.first?.field == "cold_start_ms")
    }

    @Test func hardwareKeyboardMayReportZeroHeight() throws {
        let batch = try validate([sample([("height", .double(0)), ("accessory_height", .double(0)),
                                          ("safe_area_bottom", .double(0)), ("hardware_keyboard", .bool(true))])])
        #expect(batch.rejected.isEmpty)
        #expect(batch.samples.first?.placement == .hardware)
    }

    @Test func unknownFieldsAreIgnored() throws {
        let batch = try validate([sample([("future_field", .object([("x", .int(1))]))])])
        #expect(batch.samples.count == 1)
    }

    @Test(arguments: [
        ("batch_id", "must be a UUID"),
        ("device.model", "1-32 characters"),
        ("device.os", "dotted version"),
        ("samples", "1 to 10000"),
    ])
    func rejectsBatch(field: String, reason: String) {
        #expect {
            switch field {
            case "batch_id": _ = try validate([sample()], id: .string("not-a-uuid"))
            case "device.model": _ = try validate([sample()], model: .string("iPhone 17"))
            case "device.os": _ = try validate([sample()], os: .string("twenty-six"))
            default: _ = try validate([])
            }
        } throws: { error in
            guard let error = error as? FieldError else { return false }
            return error.field == field && error.reason.contains(reason)
        }
    }

    @Test func numbersAsStringsAreRejectedPerSample() throws {
        let batch = try validate([sample([("height", .string("392"))])])
        #expect(batch.rejected.first?.field == "height")
        #expect(batch.rejected.first?.reason == "must be a number, not string")
    }
}

@Suite("Aggregation")
struct AggregationTests {
    @Test func logBucketsKeepOnePercentRelativeError() {
        var value = 0.01
        while value < 60_000 {
            let estimate = LogBucket.value(LogBucket.index(value))
            #expect(abs(estimate - value) / value <= LogBucket.relativeAccuracy + 1e-12, "value \(value)")
            value *= 1.013
        }
    }

    @Test func percentileOfBucketsIsWithinOnePercentOfExact() {
        // A long-tailed latency distribution, deterministic.
        var generator = SplitMix64(seed: 7)
        let values = (0..<20_000).map { _ in 250 * exp(generator.unit() * 3.5) }
        var histogram = CountHistogram()
        for value in values { histogram.add(LogBucket.index(value)) }
        let sorted = values.sorted()
        for q in [0.01, 0.1, 0.5, 0.9, 0.95, 0.99, 1.0] {
            let exact = sorted[max(0, Int((q * Double(sorted.count)).rounded(.up)) - 1)]
            let estimate = LogBucket.value(histogram.percentile(q)!)
            #expect(abs(estimate - exact) / exact <= 0.01, "q=\(q) exact=\(exact) estimate=\(estimate)")
        }
    }

    @Test func accessoryIsSubtractedAndHalfPointBinsRound() {
        let device = Device(model: "iPhone17,1", os: "26.1", osMajor: 26)
        var delta = AggregateDelta()
        delta.add(Sample(t: 0, event: .show, language: "en-US", orientation: .portrait, height: 380.2,
                         accessoryHeight: 44, duration: 0.25, curve: 7), device: device)
        delta.add(Sample(t: 0, event: .hide, language: "en-US", orientation: .portrait, height: 336,
                         duration: 0.25, curve: 7), device: device)
        delta.add(Sample(t: 0, event: .show, language: "en-US", orientation: .portrait, height: 55,
                         duration: 0.25, curve: 7, hardwareKeyboard: true), device: device)
        let key = SeriesKey(model: "iPhone17,1", osMajor: 26, language: "en-US", orientation: .portrait, keyboardType: "default")
        #expect(delta.heights == [
            HeightCountKey(series: key, placement: .docked, halfPoints: 672): 1,
            HeightCountKey(series: key, placement: .hardware, halfPoints: 110): 1,
        ])
        #expect(delta.animations.values.reduce(0, +) == 3)
    }

    @Test func modeBreaksTiesTowardTheTallerHeight() {
        var histogram = CountHistogram()
        histogram.add(600, 5)
        histogram.add(700, 5)
        histogram.add(650, 1)
        #expect(histogram.mode == 700)
        #expect(histogram.percentile(0.1) == 600)
        #expect(histogram.percentile(0.9) == 700)
    }
}

@Suite("Estimator fallback chain")
struct EstimatorTests {
    func delta(_ entries: [(model: String, os: Int, language: String, height: Double, count: Int)]) -> AggregateDelta {
        var delta = AggregateDelta()
        for entry in entries {
            let device = Device(model: entry.model, os: "\(entry.os).0", osMajor: entry.os)
            for _ in 0..<entry.count {
                delta.add(Sample(t: 0, event: .show, language: entry.language, orientation: .portrait, height: entry.height,
                                 safeAreaBottom: 34, duration: 0.25, curve: 7), device: device)
            }
        }
        return delta
    }

    @Test func walksEveryLevel() {
        var index = HeightIndex()
        index.apply(delta([
            ("iPhone17,1", 26, "en-US", 336, 30),
            ("iPhone17,1", 18, "en-US", 330, 25),
            ("iPhone17,1", 26, "fr-FR", 336, 5),
            ("iPhone15,2", 26, "en-US", 336, 40),
            ("iPhone15,2", 26, "ja-JP", 344, 40),
            ("iPhone13,2", 26, "en-US", 336, 40),
            ("iPhone13,2", 26, "ja-JP", 346, 40),
            ("iPhone16,2", 26, "en-US", 346, 40),
        ]))
        let estimator = HeightEstimator()
        let level1 = estimator.estimate(HeightQuery(model: "iPhone17,1", language: "en-US", osMajor: 26), in: index)
        #expect(level1.basis == .modelOSLanguage && level1.height == 336 && level1.samples == 30)

        let level2 = estimator.estimate(HeightQuery(model: "iPhone17,1", language: "en-US", osMajor: 17), in: index)
        #expect(level2.basis == .modelLanguage && level2.height == 336 && level2.samples == 55)

        // ja-JP is 8 and 10 pt taller than en-US elsewhere: lower median 8. Only one model measured
        // en-US on two OS majors, too few to show that iOS 26 moved keyboards: the base is the
        // any-OS en-US (55 samples), not iOS 26's alone.
        let level3 = estimator.estimate(HeightQuery(model: "iPhone17,1", language: "ja-JP", osMajor: 26), in: index)
        #expect(level3.basis == .modelLanguageDelta && level3.height == 344 && level3.samples == 55, "\(level3)")

        let level4 = estimator.estimate(HeightQuery(model: "iPhone17,1", language: "fr-FR"), in: index)
        #expect(level4.basis == .model && level4.height == 336 && level4.samples == 60)

        let level5 = estimator.estimate(HeightQuery(model: "iPhone99,9", language: "en-US", orientation: .landscape), in: index)
        #expect(level5.basis == .default && level5.height == 209 && level5.samples == 0)
        #expect(level1.safeAreaBottom == 34 && level1.animationDuration == 0.25 && level1.animationCurve == 7)
    }
}
