import Foundation
import KBTDCore
import KBTDStore
import Testing
@testable import KBTDServer

/// `BatchIntake.count` (what ingest runs: the accepted samples counted per key
/// as they pass) against `BatchIntake.validate` + `AggregateDelta(batch:)`
/// (what it replaced), for every status a batch can get, and key screening
/// of a counted batch against screening its samples one by one.
@Suite("Counting intake")
struct CountedIntakeTests {
    static let now = IntakeDocuments.now
    static let rules = IntakeDocuments.rules

    /// Nil when the counting pass answers as the materialising pass and the reduce after it.
    static func difference(_ document: String, rules: FieldRules = rules) -> String? {
        let json = Array(document.utf8)
        let materialised: Result<ValidatedBatch, FieldError>
        do { materialised = .success(try BatchIntake.validate(json: json, now: now, rules: rules)) } catch { materialised = .failure(error) }
        let counted: Result<CountedBatch, FieldError>
        do { counted = .success(try BatchIntake.count(json: json, now: now, rules: rules)) } catch { counted = .failure(error) }
        switch (materialised, counted) {
        case (.failure(let a), .failure(let b)): return a == b ? nil : "errors: \(a) vs \(b)"
        case (.success(let batch), .success(let got)):
            guard batch.batchID == got.batchID, batch.device == got.device else { return "batch fields differ" }
            guard batch.rejected == got.rejected else { return "rejected: \(batch.rejected) vs \(got.rejected)" }
            guard batch.samples.count == got.accepted else { return "accepted: \(batch.samples.count) vs \(got.accepted)" }
            return AggregateDelta(batch: batch) == got.delta() ? nil : "counts differ"
        default: return "one accepts, the other rejects: \(materialised) vs \(counted)"
        }
    }

    static func sample(_ extra: String = "", t: String = "1763719198", height: String = "336") -> String {
        IntakeDocuments.sample(extra, t: t, height: height)
    }

    static func batch(samples: String, device: String = IntakeDocuments.device, id: String = "\"\(IntakeDocuments.uuid)\"") -> String {
        IntakeDocuments.batch(samples: samples, device: device, id: id)
    }

    /// One document per status: valid, partial (some samples rejected), and
    /// each batch-level refusal (syntax, batch_id, device, samples, count).
    static let byStatus: [(String, String)] = [
        ("valid", batch(samples: [sample(), sample(#","keyboard_type":"numberPad""#), sample(#","cold_start_ms":412,"preloaded":true"#)]
                          .joined(separator: ","))),
        ("valid, no screen", batch(samples: sample(), device: #"{"model":"iPhone17,1","os":"26.1"}"#)),
        ("partial", batch(samples: [sample(), sample(height: "-1"), "7", sample(#","keyboard_type":"bogus""#), sample(t: "1")]
                            .joined(separator: ","))),
        ("every sample rejected", batch(samples: [sample(height: "-1"), "null"].joined(separator: ","))),
        ("not JSON", batch(samples: sample()) + "x"),
        ("not an object", "[1]"),
        ("no batch_id", #"{"device":\#(IntakeDocuments.device),"samples":[\#(sample())]}"#),
        ("bad batch_id", batch(samples: sample(), id: "\"nope\"")),
        ("no device", batch(samples: sample(), device: "null")),
        ("bad device.os", batch(samples: sample(), device: #"{"model":"iPhone17,1","os":"x"}"#)),
        ("no samples", #"{"batch_id":"\#(IntakeDocuments.uuid)","device":\#(IntakeDocuments.device)}"#),
        ("empty samples", batch(samples: "")),
        ("samples not an array", #"{"batch_id":"\#(IntakeDocuments.uuid)","device":\#(IntakeDocuments.device),"samples":{}}"#),
        ("too many samples", batch(samples: Array(repeating: sample(), count: 10_001).joined(separator: ","))),
    ]

    @Test func answersAsTheMaterialisingPassForEveryStatus() throws {
        for (status, document) in Self.byStatus {
            #expect(Self.difference(document) == nil, "\(status)")
        }
        // The statuses are what they say: a valid and a partial batch are accepted, the refusals throw.
        let valid = try BatchIntake.count(json: Array(Self.byStatus[0].1.utf8), now: Self.now, rules: Self.rules)
        #expect(valid.accepted == 3 && valid.rejected.isEmpty && valid.keys.count == 2)
        let partial = try BatchIntake.count(json: Array(Self.byStatus[2].1.utf8), now: Self.now, rules: Self.rules)
        #expect(partial.accepted == 1 && partial.rejected.map(\.index) == [1, 2, 3, 4])
        #expect(partial.rejected.map(\.field) == ["height", "sample", "keyboard_type", "t"])
        for (status, document) in Self.byStatus.dropFirst(4) {
            #expect(throws: FieldError.self, "\(status)") { try BatchIntake.count(json: Array(document.utf8), now: Self.now, rules: Self.rules) }
        }
    }

    @Test func trickyDocumentsAnswerAsTheMaterialisingPass() {
        for document in IntakeDocuments.tricky {
            #expect(Self.difference(document) == nil, "\(document.prefix(200))")
        }
    }

    /// Many keys in one batch (past the linear search): keys found by lookup count as by scanning.
    @Test func manyKeysCountAsTheMaterialisingPass() throws {
        let samples = (0..<300).map { i in
            #"{"t":1763719198,"event":"show","language":"l\#(i % 40)","orientation":"\#(i % 3 == 0 ? "landscape" : "portrait")","height":\#(300 + i % 7),"duration":0.25,"curve":7\#(i % 5 == 0 ? #","keyboard_type":"default""# : "")}"#
        }
        let document = Self.batch(samples: samples.joined(separator: ","))
        #expect(Self.difference(document) == nil)
        let counted = try BatchIntake.count(json: Array(document.utf8), now: Self.now, rules: Self.rules)
        // "default" written out and left out are one key.
        #expect(counted.keys.count == 80)
        #expect(Set(counted.keys).count == 80)
    }

    /// Refusing keys of a counted batch leaves what removing those keys' samples one by one leaves.
    @Test func refusingKeysMatchesFilteringSamples() throws {
        let samples = [Self.sample(), Self.sample(height: "-1"), Self.sample(#","keyboard_type":"numberPad""#), "3",
                       Self.sample().replacingOccurrences(of: "en-US", with: "de-DE"), Self.sample(#","keyboard_type":"numberPad""#),
                       Self.sample(t: "1"), Self.sample()]
        let json = Array(Self.batch(samples: samples.joined(separator: ",")).utf8)
        let materialised = try BatchIntake.validate(json: json, now: Self.now, rules: Self.rules)
        let keyOf = { (sample: Sample) in
            SeriesKey(model: materialised.device.model, osMajor: materialised.device.osMajor, language: sample.language,
                      orientation: sample.orientation, keyboardType: sample.keyboardType)
        }
        let counted = try BatchIntake.count(json: json, now: Self.now, rules: Self.rules)
        #expect(counted.keys.count == 3)
        for refusedKeys in [[0], [1], [2], [0, 2], [0, 1, 2]] {
            var batch = counted
            batch.refuse(Dictionary(uniqueKeysWithValues: refusedKeys.map { ($0, "refused \($0)") }))
            // The same by hand: accepted samples fill the indices not rejected, in order.
            let refused = Dictionary(uniqueKeysWithValues: refusedKeys.map { (counted.keys[$0], "refused \($0)") })
            var rejected = materialised.rejected
            var kept: [Sample] = []
            var index = 0
            let faulty = Set(materialised.rejected.map(\.index))
            for sample in materialised.samples {
                while faulty.contains(index) { index += 1 }
                if let reason = refused[keyOf(sample)] {
                    rejected.append(SampleError(index: index, field: "key", reason: reason))
                } else {
                    kept.append(sample)
                }
                index += 1
            }
            rejected.sort { $0.index < $1.index }
            #expect(batch.rejected == rejected, "\(refusedKeys)")
            #expect(batch.accepted == kept.count)
            #expect(batch.keys == counted.keys.enumerated().filter { !refusedKeys.contains($0.offset) }.map(\.element))
            var filtered = materialised
            filtered.samples = kept
            #expect(batch.delta() == AggregateDelta(batch: filtered), "\(refusedKeys)")
        }
    }

    /// `KeyGate.screen` of a counted batch decides, rejects and counts as screening its samples.
    @Test func keyGateScreensACountedBatchAsItsSamples() throws {
        var limits = KeyLimits()
        limits.maxLanguagesPerModel = 2
        let languages = ["en-US", "de-DE", "fr-FR", "en-US", "ja-JP", "de-DE", "fr-FR"]
        let samples = languages.enumerated().map { i, language in
            i == 2 ? Self.sample(height: "-1") : Self.sample().replacingOccurrences(of: "en-US", with: language)
        }
        let json = Array(Self.batch(samples: samples.joined(separator: ",")).utf8)
        var materialised = try BatchIntake.validate(json: json, now: Self.now, rules: Self.rules)
        var counted = try BatchIntake.count(json: json, now: Self.now, rules: Self.rules)
        let source = SourceID(network: "203.0.113.0")
        let first = KeyGate(limits: limits).screen(&materialised, source: source, now: Self.now)
        let second = KeyGate(limits: limits).screen(&counted, source: source, now: Self.now)
        #expect(first.refusals == second.refusals)
        #expect(first.refusals[.languagesPerModel] == 2)  // ja-JP and the second fr-FR (the first one fails its height)
        #expect(first.created == second.created)
        #expect(materialised.rejected == counted.rejected)
        #expect(materialised.samples.count == counted.accepted)
        #expect(AggregateDelta(batch: materialised) == counted.delta())
        #expect(PendingBatch(materialised, receivedAt: 7).delta == PendingBatch(counted, receivedAt: 7).delta)
    }
}
