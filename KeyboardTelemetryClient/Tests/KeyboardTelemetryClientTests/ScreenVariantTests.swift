import Foundation
import KeyboardTelemetryClient
import KeyboardTelemetryClientTesting
import Testing

/// The bundled table's `screen_variants`: a Display Zoom phone (a 390x844 iPhone reporting 320x693)
/// takes its screen's height; the same model at standard zoom, or without a known screen, the model's.
@Suite("KeyboardTelemetryClient picks its screen's variant from the bundled table")
struct ScreenVariantTests {
    static let table = #"""
        {"format": "kbtd-height-table", "version": 1, "defaults": {"portrait": 335.0, "landscape": 209.0},
         "models": {"iPhone14,5": {"screen": "390x844",
                                   "heights": {"en-US|portrait|default": 336.0, "ja-JP|portrait|default": 344.0},
                                   "os": {"26.2": {"en-US|portrait|default": 340.0}},
                                   "screen_variants": {"320x693": {"en-US|portrait|default": 319.0}}},
                    "iPhone13,2": {"screen": "390x844", "heights": {"en-US|portrait|default": 336.0}}},
         "screens": {}}
        """#

    @Test func theTableAnswersTheZoomedScreenItsOwnHeightAndEveryOtherScreenTheModels() throws {
        let bundled = try BundledHeightTable(data: Data(Self.table.utf8))
        func height(_ model: String = "iPhone14,5", os: String? = "26.1", screen: String?, _ language: String = "en-US") -> Double? {
            bundled.height(model: model, os: os, screen: screen, language: language, orientation: .portrait, keyboardType: .default)
        }
        #expect(height(screen: "320x693") == 319)
        #expect(height(screen: "390x844") == 336, "the standard screen: the model's height")
        #expect(height(screen: nil) == 336, "no screen known: the model's height")
        #expect(height(screen: "375x812") == 336, "a screen the table has no variant for")
        #expect(height(screen: "320x693", "ja-JP") == 344, "a key without a variant on that screen: the model's")
        #expect(height(os: "26.2", screen: "320x693") == 319, "the screen's own height comes before the release's")
        #expect(height(os: "26.2", screen: "390x844") == 340)
        #expect(height("iPhone13,2", screen: "320x693") == 336, "tables from before screen variants")
    }

    @Test func aZoomedClientWithNoNetworkServesItsScreensHeight() async throws {
        let bundled = try BundledHeightTable(data: Data(Self.table.utf8))
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for (screen, expected) in [("320x693", 319.0), ("390x844", 336.0)] as [(String, Double)] {
            var configuration = Fixtures.configuration(directory: directory.appendingPathComponent(screen))
            configuration.bundledHeights = bundled
            let client = KeyboardTelemetryClient(device: TelemetryDevice(model: "iPhone14,5", os: "26.1", screen: screen),
                                                 configuration: configuration, transport: Fixtures.refusing())
            #expect(client.heightEstimate(language: "en-US", orientation: .portrait) == .init(height: expected, source: .bundled))
            await client.shutdown()
        }
    }

    @Test func aVariantsMemberOfAnotherShapeCostsNothingElse() throws {
        let odd = Self.table.replacingOccurrences(of: #"{"320x693": {"en-US|portrait|default": 319.0}}"#, with: #""320x693""#)
        #expect(odd != Self.table)
        let bundled = try BundledHeightTable(data: Data(odd.utf8))
        #expect(bundled.height(model: "iPhone14,5", os: "26.1", screen: "320x693", language: "en-US", orientation: .portrait,
                               keyboardType: .default) == 336)
    }
}
