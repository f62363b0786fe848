import Foundation
import KBTDCore

/// The Display Zoom scenario: five phone models of one standard screen (390x844), most devices at
/// standard zoom and a minority zoomed (320x693), whose keyboard is 17 pt shorter (336 -> 319 on a
/// notched phone), on two OS majors.
package enum ZoomFleet {
    package static let models = ReleaseFleet.models
    package static let standard = ScreenSize(width: 390, height: 844)
    package static let zoomed = ScreenSize(width: 320, height: 693)
    package static let difference = 17.0
    package static let oses = ["18.6", "26.1"]
    /// Each model's own standard keyboard (en-US), a few points apart so no answer is right by accident.
    package static func base(_ model: String) -> Double { ReleaseFleet.base(model) }

    /// One device's batch: `count` docked en-US shows on `os`, from a phone reporting `screen`.
    package static func batch(model: String, os: String, screen: ScreenSize, height: Double, count: Int) -> AggregateDelta {
        var delta = ReleaseFleet.batch(model: model, os: os, language: "en-US", height: height, count: count)
        delta.screens[ModelScreenKey(model: model, screen: screen), default: 0] += 1
        delta.recordScreen(screen)
        return delta
    }

    /// Per model and OS major: 1,500 samples at standard zoom and 300 zoomed (a trusted peer's).
    package static func index() -> HeightIndex {
        var index = HeightIndex()
        for model in models {
            for os in oses {
                index.apply(batch(model: model, os: os, screen: standard, height: base(model), count: 1_500))
                index.apply(batch(model: model, os: os, screen: zoomed, height: base(model) - difference, count: 300))
            }
        }
        return index
    }

    /// The same fleet as batch bodies (standard, then zoomed, per model and OS), for a daemon.
    package static func bodies(standardCount: Int = 150, zoomedCount: Int = 40) -> [[UInt8]] {
        models.flatMap { model in
            oses.flatMap { os in
                [batchBody(model: model, os: os, screen: standard.description, samples: shows(standardCount, height: base(model))),
                 batchBody(model: model, os: os, screen: zoomed.description,
                           samples: shows(zoomedCount, height: base(model) - difference))]
            }
        }
    }
}
