import Foundation
import KBTDCore

/// The point-release scenario: five models with iOS 26.1 data, then iOS 26.2 moves one language's keyboard.
package enum ReleaseFleet {
    package static let models = ["iPhone17,1", "iPhone17,2", "iPhone17,3", "iPhone17,4", "iPhone17,5"]
    /// Each model's own keyboard (en-US), a few points apart so no answer is right by accident.
    package static func base(_ model: String) -> Double { 330 + Double(models.firstIndex(of: model) ?? 0) * 2 }
    package static let candidateBar = 44.0

    /// One device's batch: `count` docked shows on `os`.
    package static func batch(model: String, os: String, language: String, height: Double, count: Int) -> AggregateDelta {
        let device = Device(model: model, os: os, osMajor: FieldRules.osMajor(os)!)
        var delta = AggregateDelta()
        for _ in 0..<count {
            delta.add(Sample(t: 0, event: .show, language: language, orientation: .portrait, height: height,
                             safeAreaBottom: 34, duration: 0.25, curve: 7), device: device)
        }
        delta.recordRelease(os: os)
        return delta
    }

    /// 26.1 history (1,500 ja-JP and 1,500 en-US samples per model), then `newSamples` per model on 26.2
    /// where ja-JP is `shift` points taller (en-US as before).
    package static func index(shift: Double, newSamples: Int, newEnglish: Int = 100) -> HeightIndex {
        var index = HeightIndex()
        for model in models {
            index.apply(batch(model: model, os: "26.1", language: "ja-JP", height: base(model) + candidateBar, count: 1_500))
            index.apply(batch(model: model, os: "26.1", language: "en-US", height: base(model), count: 1_500))
            if newSamples > 0 {
                index.apply(batch(model: model, os: "26.2", language: "ja-JP", height: base(model) + candidateBar + shift,
                                  count: newSamples))
            }
            index.apply(batch(model: model, os: "26.2", language: "en-US", height: base(model), count: newEnglish))
        }
        return index
    }

    package static func query(_ model: String, _ language: String, _ os: String?) throws -> HeightQuery {
        try HeightQuery(parameters: { ["model": model, "language": language, "os": os][$0] ?? nil })
    }
}
