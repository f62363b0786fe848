import Foundation
import KBTDCore
import KeyboardTelemetryClient
import Testing

/// Screen variants (Display Zoom) where operators and apps see them: `kbtd evaluate --screens`
/// and `kbtd export`'s `screen_variants`, read by the client library.
@Suite("Screen variants in evaluate, export and the client", .ownThreads, .timeLimit(.minutes(10)))
struct ScreenVariantSurfaceTests {
    /// An app holding the Display Zoom fleet (`ZoomFleet`), and one model no phone zoomed on.
    static func app() async throws -> InProcessApp {
        let app = try InProcessApp()
        var bodies = ZoomFleet.bodies()
        for os in ZoomFleet.oses {
            bodies.append(batchBody(model: "iPhone16,1", os: os, screen: "393x852", samples: shows(150, height: 336)))
        }
        for body in bodies {
            let response = try await app.post(gzip(body), encoding: "gzip")
            #expect(response.status == 202, "\(response.text)")
        }
        return app
    }

    @Test func evaluateScreensScoresZoomedPhonesBeforeAndAfterScreenVariants() async throws {
        let app = try await Self.app()
        let run = try runKBTD(["evaluate", "--screens", "--database", app.database, "--format", "json"])
        #expect(run.status == 0, "\(run.stderr)")
        let document = try JSONParser.parse(Array(run.stdout.utf8))
        let chains = try #require(document["chains"]?.array)
        #expect(chains.compactMap { $0["chain"]?.string } == ["current", "before-screen-variants"])
        func row(_ chain: Int, _ asked: String, differs: Bool) -> JSONValue? {
            chains[chain]["rows"]?.array?.first { $0["asked"] == .string(asked) && $0["differs_from_key"] == .bool(differs) }
        }
        for asked in ["key hidden", "key visible"] {
            // 5 zoomed models on 2 OS majors: served their own height now, the majority's 17 pt before.
            let after = try #require(row(0, asked, differs: true), "\(run.stdout)")
            let before = try #require(row(1, asked, differs: true))
            #expect(after["cases"] == .number(10) && before["cases"] == .number(10))
            #expect(after["mean_abs_error"] == .number(0) && after["within_half_point"] == .number(1), "\(asked): \(after)")
            #expect(before["mean_abs_error"] == .number(ZoomFleet.difference) && before["within_half_point"] == .number(0))
            // The standard screens (and the unzoomed model) are served as before, exactly.
            #expect(row(0, asked, differs: false)?["cases"] == .number(12))
            #expect(row(0, asked, differs: false)?["mean_abs_error"] == .number(0))
            #expect(row(1, asked, differs: false)?["mean_abs_error"] == .number(0))
        }

        let table = try runKBTD(["evaluate", "--screens", "--database", app.database, "--format", "table"])
        #expect(table.status == 0 && table.stdout.contains("before-screen-variants") && table.stdout.contains("key hidden"), "\(table.stdout)")
        let cases = try runKBTD(["evaluate", "--screens", "--cases", "--database", app.database, "--model", "iPhone17,1"])
        #expect(cases.status == 0)
        let lines = cases.stdout.split(separator: "\n")
        // One model, 2 OS majors, 2 screens, asked 2 ways, on 2 chains.
        #expect(lines.count == 1 + 16, "\(cases.stdout)")
        #expect(lines.contains { $0.hasPrefix("current,\"iPhone17,1\",26,en-US,portrait,default,320x693,key hidden,model+language,") })

        // The other rows of `kbtd evaluate` on the chain before screen variants, for comparison.
        #expect(try runKBTD(["evaluate", "--database", app.database, "--chain", "before-screen-variants", "--format", "json"]).status == 0)
        let combined = try runKBTD(["evaluate", "--screens", "--releases", "--database", app.database])
        #expect(combined.status == 64 && combined.stderr.contains("--screens"))
        let chain = try runKBTD(["evaluate", "--screens", "--chain", "before-releases", "--database", app.database])
        #expect(chain.status == 64 && chain.stderr.contains("--chain"))
        await app.app.shutdown()
    }

    /// `kbtd export` carries each model's zoomed screen where its height differs, and a client
    /// with no network on that screen takes it; on the standard screen, or with no screen, the model's.
    @Test func theExportCarriesScreenVariantsAndTheClientPicksItsScreens() async throws {
        let app = try await Self.app()
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("kbtd-heights.json")
        let document = try app.export(to: file)
        let table = try BundledHeightTable(contentsOf: file)
        for model in ZoomFleet.models {
            let entry = try #require(document["models"]?[model], "\(document)")
            let base = ZoomFleet.base(model)
            #expect(entry["heights"]?["en-US|portrait|default"]?.double == base)
            let variants = try #require(entry["screen_variants"], "\(model): \(entry)")
            #expect(variants == .object(["320x693": .object(["en-US|portrait|default": .number(base - ZoomFleet.difference)])]),
                    "only the screen whose height differs: \(variants)")
            // What the table says for each screen is what `/v1/height` serves it (without an OS, as the table).
            for screen in [ZoomFleet.zoomed.description, ZoomFleet.standard.description] {
                let served = try JSONParser.parse(try await app.get("/v1/height?model=\(model)&language=en-US&screen=\(screen)").body)
                let bundled = table.height(model: model, screen: screen, language: "en-US", orientation: .portrait, keyboardType: .default)
                #expect(bundled == served["height"]?.double, "\(model) \(screen)")
            }
            #expect(table.height(model: model, screen: nil, language: "en-US", orientation: .portrait, keyboardType: .default) == base)
        }
        #expect(document["models"]?["iPhone16,1"]?["heights"] != nil)
        #expect(document["models"]?["iPhone16,1"]?["screen_variants"] == nil, "no zoomed phone: no variant")

        // A client of each screen, with no network: the zoomed one lays out for its own keyboard.
        let model = ZoomFleet.models[0]
        for (screen, expected) in [("320x693", ZoomFleet.base(model) - ZoomFleet.difference), ("390x844", ZoomFleet.base(model)),
                                   (nil, ZoomFleet.base(model))] as [(String?, Double)] {
            var configuration = ClientFixtures.configuration(port: unreachablePort(),
                                                             directory: directory.appendingPathComponent(screen ?? "none"))
            configuration.bundledHeights = table
            let client = KeyboardTelemetryClient(device: TelemetryDevice(model: model, os: "26.1", screen: screen),
                                                 configuration: configuration)
            #expect(await client.refreshHeights(force: true) != .updated)
            #expect(client.heightEstimate(language: "en-US", orientation: .portrait) == .init(height: expected, source: .bundled),
                    "\(screen ?? "no screen")")
            await client.shutdown()
        }
        await app.app.shutdown()
    }
}
