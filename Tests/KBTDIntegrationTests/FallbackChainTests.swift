import Foundation
import KBTDCore
import KBTDStore
import KeyboardTelemetryClient
import Testing

/// A small fleet drawn from the published iPhone table (data/): pairs of models
/// that share a screen, on iOS 18 and 26, in en-US and ja-JP. The iOS 26 shift and the ja-JP extra
/// come from a seeded draw, so the estimator can only get them right by measuring them.
struct ShiftedFleet {
    struct Model {
        var identifier: String
        var screen: String
        var base: Double
    }

    var models: [Model]
    var osShift: Double
    var languageExtra: Double
    /// Samples per key on iOS 18 and 26 (18 has more: its any-OS mode wins).
    let counts: [(os: String, major: Int, count: Int)] = [("18.6.2", 18, 40), ("26.1", 26, 30)]
    let languages = ["en-US", "ja-JP"]

    init(seed: UInt64) throws {
        var random = SplitMix64(seed: seed, stream: 12)
        osShift = Double(4 + Int(random.next() % 5))  // 4...8 pt
        languageExtra = Double(7 + Int(random.next() % 4))  // 7...10 pt
        let text = try String(contentsOf: TestPaths.fixtures.appendingPathComponent("iphone-keyboard-heights.csv"), encoding: .utf8)
        var models: [Model] = []
        for line in text.split(separator: "\n") where !line.hasPrefix("#") && !line.hasPrefix("identifiers") {
            // identifiers (holding commas), models, screen_w, screen_h, portrait_bar, portrait_nobar, landscape_bar, landscape_nobar, quality
            let cells = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            let tail = Array(cells.suffix(8))
            let identifiers = cells.dropLast(8).joined(separator: ",").split(separator: " ").map(String.init)
            guard identifiers.count >= 2, let base = Double(tail[3]) else { continue }
            for identifier in identifiers.prefix(2) {
                models.append(Model(identifier: identifier, screen: "\(tail[1])x\(tail[2])", base: base))
            }
            if models.count == 6 { break }
        }
        self.models = models
    }

    func truth(_ model: Model, major: Int, language: String) -> Double {
        model.base + (major == 26 ? osShift : 0) + (language == "ja-JP" ? languageExtra : 0)
    }

    func load(into daemon: TestDaemon, skip: Set<String> = []) throws {
        for model in models where !skip.contains(model.identifier) {
            for (os, major, count) in counts {
                let samples = languages.flatMap { shows(count, height: truth(model, major: major, language: $0), language: $0) }
                let response = try daemon.post(gzip(batchBody(model: model.identifier, os: os, screen: model.screen, samples: samples)),
                                               encoding: "gzip")
                #expect(response.status == 202, "\(response.text)")
            }
        }
    }

    func load(into daemon: InProcessApp, skip: Set<String> = []) async throws {
        for model in models where !skip.contains(model.identifier) {
            for (os, major, count) in counts {
                let samples = languages.flatMap { shows(count, height: truth(model, major: major, language: $0), language: $0) }
                let response = try await daemon.post(gzip(batchBody(model: model.identifier, os: os, screen: model.screen, samples: samples)),
                                               encoding: "gzip")
                #expect(response.status == 202, "\(response.text)")
            }
        }
    }
}

@Suite("OS-aware chain, screen level, evaluate and export", .ownThreads, .timeLimit(.minutes(10)))
struct FallbackChainTests {
    /// An index holding `fleet`, with every key trusted (as a loopback daemon stores it).
    func index(_ fleet: ShiftedFleet, extra: [(String, Int, String, Double, Int)] = []) -> HeightIndex {
        var delta = AggregateDelta()
        func add(_ model: String, _ major: Int, _ language: String, _ height: Double, _ count: Int) {
            let device = Device(model: model, os: "\(major).0", osMajor: major)
            for _ in 0..<count {
                delta.add(Sample(t: 0, event: .show, language: language, orientation: .portrait, height: height,
                                 safeAreaBottom: 34, duration: 0.25, curve: 7), device: device)
            }
        }
        for model in fleet.models {
            for (_, major, count) in fleet.counts {
                for language in fleet.languages { add(model.identifier, major, language, fleet.truth(model, major: major, language: language), count) }
            }
        }
        for entry in extra { add(entry.0, entry.1, entry.2, entry.3, entry.4) }
        var index = HeightIndex()
        index.apply(delta)
        return index
    }

    @Test func unseenLanguageOnAnOSGetsTheOSAwareAnswer() throws {
        let fleet = try ShiftedFleet(seed: 7)
        let model = fleet.models[0]
        // The new phone has en-US on both OS majors (more on iOS 18) and no ja-JP anywhere.
        let newModel = "iPhone19,1"
        let index = index(fleet, extra: [
            (newModel, 18, "en-US", model.base + 1, 40), (newModel, 26, "en-US", model.base + 1 + fleet.osShift, 30),
        ])
        let query = HeightQuery(model: newModel, language: "ja-JP", osMajor: 26)
        let expected = model.base + 1 + fleet.osShift + fleet.languageExtra

        let current = HeightEstimator().estimate(query, in: index)
        #expect(current.basis == .modelLanguageDelta && current.height == expected && current.samples == 30, "\(current)")
        // Today's chain took the any-OS mode (iOS 18) and was off by exactly the OS shift.
        let before = HeightEstimator(chain: .beforeOSAware).estimate(query, in: index)
        #expect(before.basis == .modelLanguageDelta && before.height == expected - fleet.osShift, "\(before)")
        // Without `os` both chains give the any-OS answer.
        #expect(HeightEstimator().estimate(HeightQuery(model: newModel, language: "ja-JP"), in: index) == before)

        // Level 4: a language no model has (fr-FR) takes the model's own iOS 26 data first.
        let model4 = HeightEstimator().estimate(HeightQuery(model: newModel, language: "fr-FR", osMajor: 26), in: index)
        #expect(model4.basis == .model && model4.height == model.base + 1 + fleet.osShift && model4.samples == 30)
        let model4Before = HeightEstimator(chain: .beforeOSAware).estimate(
            HeightQuery(model: newModel, language: "fr-FR", osMajor: 26), in: index)
        #expect(model4Before.basis == .model && model4Before.height == model.base + 1 && model4Before.samples == 70)
        // An OS major the model never reported falls back to the any-OS rule.
        let unseenOS = HeightEstimator().estimate(HeightQuery(model: newModel, language: "ja-JP", osMajor: 27), in: index)
        #expect(unseenOS == HeightEstimator().estimate(HeightQuery(model: newModel, language: "ja-JP"), in: index))
    }

    @Test func aThinOSMajorTakesItsBaseFromThatOSAndTheLanguageDifferenceFromAnyOS() throws {
        let fleet = try ShiftedFleet(seed: 13)
        let base = fleet.models[0].base
        // iOS 27 so far: three phones show that it moved en-US keyboards by 10 pt, and one other phone
        // measured ja-JP there, a key dominated by a keyboard without its bar.
        let index = index(fleet, extra: [
            ("iPhone20,1", 27, "en-US", base + 10, 30), ("iPhone20,1", 27, "ja-JP", base + 10 - 44, 30),
            ("iPhone20,2", 27, "en-US", base + 10, 30), ("iPhone20,2", 18, "en-US", base, 40),
            (fleet.models[1].identifier, 27, "en-US", fleet.models[1].base + 10, 30),
            (fleet.models[2].identifier, 27, "en-US", fleet.models[2].base + 10, 30),
        ])
        let answer = HeightEstimator().estimate(HeightQuery(model: "iPhone20,2", language: "ja-JP", osMajor: 27), in: index)
        // The base is iOS 27's own en-US; the difference is the median over all seven models (any OS).
        #expect(answer.basis == .modelLanguageDelta && answer.height == base + 10 + fleet.languageExtra && answer.samples == 30,
                "\(answer)")
    }

    @Test func whereNoReleaseMovedKeyboardsTheOSAwareLevelsAnswerAsTheAnyOSRule() throws {
        var fleet = try ShiftedFleet(seed: 17)
        fleet.osShift = 0
        let model = fleet.models[0]
        // The new phone's iOS 26 en-US is thin and dominated by devices without the predictive bar;
        // its iOS 18 en-US is the real keyboard. No model's keyboards differ between iOS 18 and 26.
        let newModel = "iPhone19,3"
        let index = index(fleet, extra: [
            (newModel, 18, "en-US", model.base, 60), (newModel, 26, "en-US", model.base - 44, 20),
            (newModel, 26, "en-US", model.base, 12),
        ])
        let estimator = HeightEstimator()
        for language in ["ja-JP", "fr-FR"] {
            let query = HeightQuery(model: newModel, language: language, osMajor: 26)
            let answer = estimator.estimate(query, in: index)
            let before = HeightEstimator(chain: .beforeOSAware).estimate(query, in: index)
            #expect(answer == before, "\(language): \(answer) vs \(before)")
            #expect(answer.height == model.base + (language == "ja-JP" ? fleet.languageExtra : 0), "\(answer)")
        }
        #expect(!estimator.osMoved(26, languages: ["en-US"], orientation: .portrait, keyboardType: "default", in: index))
        // The same thin key with a real release shift (every model 6 pt taller on iOS 26) opens it.
        fleet.osShift = 6
        #expect(estimator.osMoved(26, languages: ["en-US"], orientation: .portrait, keyboardType: "default",
                                  in: self.index(fleet)))
    }

    @Test func unseenModelWithAKnownScreenGetsTheScreenLevelAndTheCLIAgrees() async throws {
        let fleet = try ShiftedFleet(seed: 11)
        let daemon = try InProcessApp()
        try await fleet.load(into: daemon)
        let known = fleet.models[2]
        let query = "model=iPhone99,1&language=ja-JP&os=26.1&screen=\(known.screen)"
        let response = try await daemon.get("/v1/height?" + query)
        #expect(response.status == 200)
        #expect(response.json?["basis"] == .string("screen+language"), "\(response.text)")
        #expect(response.json?["height"] == .number(fleet.truth(known, major: 26, language: "ja-JP")))
        // Both models of that screen on iOS 26.
        #expect(response.json?["samples"] == .number(60))
        let cli = try runKBTD(["height", "--model", "iPhone99,1", "--language", "ja-JP", "--os", "26.1", "--screen", known.screen,
                               "--database", daemon.database])
        #expect(cli.status == 0, "\(cli.stderr)")
        #expect(cli.stdout == response.text + "\n", "kbtd height must print what the endpoint serves")

        // Without a screen, or with one nobody reported, the model is unknown: the constant.
        #expect(try await daemon.get("/v1/height?model=iPhone99,1&language=ja-JP&os=26.1").json?["basis"] == .string("default"))
        #expect(try await daemon.get("/v1/height?model=iPhone99,1&language=ja-JP&screen=1x1").json?["basis"] == .string("default"))

        // /v1/heights with screen= answers every language measured on that screen.
        let all = try #require(try await daemon.get("/v1/heights?model=iPhone99,1&os=26.1&screen=\(known.screen)").json)
        let estimates = all["estimates"]?.array ?? []
        #expect(estimates.map { $0["language"]?.string ?? "" } == ["en-US", "ja-JP"])
        #expect(estimates.allSatisfy { $0["basis"] == .string("screen+language") })
        #expect(estimates.last?["height"] == .number(fleet.truth(known, major: 26, language: "ja-JP")))

        // Bad screens: a 400 naming the parameter, on both endpoints and the CLI.
        for bad in ["393", "0x852", "393x4097", "393x852x1", "abcxdef", "-1x5", "393X852"] {
            let height = try await daemon.get("/v1/height?model=iPhone99,1&language=en-US&screen=\(bad)")
            #expect(height.status == 400, "\(bad)")
            #expect(height.json?["field"] == .string("screen"), "\(height.text)")
            #expect(try await daemon.get("/v1/heights?model=iPhone99,1&screen=\(bad)").status == 400, "\(bad)")
        }
        let badCLI = try runKBTD(["height", "--model", "iPhone99,1", "--language", "en-US", "--screen", "wide",
                                  "--database", daemon.database])
        #expect(badCLI.status == 64 && badCLI.stderr.contains("--screen"))
    }

    @Test func aStrayScreenReportDoesNotListAModelUnderThatScreen() throws {
        var directory = ScreenDirectory()
        let main = try #require(ScreenSize("402x874")), odd = try #require(ScreenSize("393x852"))
        directory.add(model: "iPhone17,1", screen: main, count: 19)
        directory.add(model: "iPhone17,1", screen: odd, count: 1)
        #expect(directory.models(withScreen: main) == ["iPhone17,1"])
        #expect(directory.models(withScreen: odd).isEmpty)  // 1 of 20 batches
        directory.add(model: "iPhone17,1", screen: odd, count: 2)
        #expect(directory.models(withScreen: odd) == ["iPhone17,1"])  // 3 of 22: counted under each
        #expect(directory.primaryScreen(of: "iPhone17,1") == main)
        // At most 16 screens per model are kept.
        for width in 1...40 { directory.add(model: "iPad99,1", screen: ScreenSize(width: width, height: 1000), count: 1) }
        #expect(directory.countsByModel["iPad99,1"]?.count == 16)
        #expect(ScreenSize("0393x852") == nil && ScreenSize("4096x4096") == ScreenSize(width: 4096, height: 4096))
    }

    @Test func deviceScreenIsValidatedPerBatch() async throws {
        let daemon = try InProcessApp()
        for bad: JSONOutput in [.string("393x0"), .string("wide"), .string(String(repeating: "9", count: 200)), .int(393)] {
            let document = JSONOutput.object([
                ("batch_id", .string(UUID().uuidString)),
                ("device", .object([("model", .string("iPhone17,1")), ("os", .string("26.1")), ("screen", bad)])),
                ("samples", .array(shows(1, height: 336).map(\.json))),
            ])
            let response = try await daemon.post(Array(document.serialized().utf8))
            #expect(response.status == 400, "\(bad.serialized())")
            #expect(response.json?["field"] == .string("device.screen"), "\(response.text)")
        }
        #expect(try await daemon.post(batchBody(screen: "402x874", samples: shows(1, height: 336))).status == 202)
        #expect(try await daemon.post(batchBody(screen: nil, samples: shows(1, height: 336))).status == 202)
    }

    /// Scores the way `kbtd evaluate` documents it, written out independently.
    struct Expected {
        var cases: Int
        var mae: Double
        var p90: Double
        var within: Double
        var defaultMAE: Double

        init(_ errors: [Double], defaults: [Double]) {
            cases = errors.count
            mae = errors.reduce(0, +) / Double(errors.count)
            let sorted = errors.sorted()
            p90 = sorted[Int((0.9 * Double(sorted.count)).rounded(.up)) - 1]
            within = Double(errors.filter { $0 <= 0.5 }.count) / Double(errors.count)
            defaultMAE = defaults.reduce(0, +) / Double(defaults.count)
        }

        func matches(_ row: JSONValue?) -> Bool {
            guard let row else { return false }
            func close(_ field: String, _ value: Double) -> Bool { abs((row[field]?.double ?? .nan) - value) < 1e-9 }
            return row["cases"] == .number(Double(cases)) && close("mean_abs_error", mae) && close("p90_abs_error", p90)
                && close("within_half_point", within) && close("default_mean_abs_error", defaultMAE)
        }
    }

    @Test func evaluateReportsTheErrorsOfAFleetWithAKnownShift() async throws {
        let fleet = try ShiftedFleet(seed: 3)
        let daemon = try InProcessApp()
        try await fleet.load(into: daemon)

        var truths: [(major: Int, truth: Double)] = []
        for model in fleet.models {
            for (_, major, _) in fleet.counts {
                for language in fleet.languages { truths.append((major, fleet.truth(model, major: major, language: language))) }
            }
        }
        let defaults = truths.map { abs(335 - $0.truth) }
        // Key hidden: model+language answers from the other OS major, off by the shift, in both chains.
        let keyHidden = Expected(truths.map { _ in fleet.osShift }, defaults: defaults)
        // Language hidden: the OS-aware delta is exact; today's took iOS 18's base for every OS.
        let deltaCurrent = Expected(truths.map { _ in 0 }, defaults: defaults)
        let deltaBefore = Expected(truths.map { $0.major == 26 ? fleet.osShift : 0 }, defaults: defaults)
        // Model hidden: the other model with the same screen knows; today's chain had only the constant.
        let screen = Expected(truths.map { _ in 0 }, defaults: defaults)
        let constant = Expected(defaults, defaults: defaults)

        func levels(_ chain: String) throws -> [String: JSONValue] {
            let run = try runKBTD(["evaluate", "--database", daemon.database, "--format", "json", "--chain", chain])
            #expect(run.status == 0, "\(run.stderr)")
            let document = try JSONParser.parse(Array(run.stdout.utf8))
            #expect(document["chain"] == .string(chain))
            return Dictionary(uniqueKeysWithValues: (document["levels"]?.array ?? []).map { ($0["basis"]?.string ?? "", $0) })
        }
        let current = try levels("current")
        #expect(Set(current.keys) == ["model+language", "model+language-delta", "screen+language"], "\(current.keys)")
        #expect(keyHidden.matches(current["model+language"]), "\(String(describing: current["model+language"]))")
        #expect(deltaCurrent.matches(current["model+language-delta"]))
        #expect(screen.matches(current["screen+language"]))

        let before = try levels("before-os-aware")
        #expect(Set(before.keys) == ["model+language", "model+language-delta", "default"], "\(before.keys)")
        #expect(keyHidden.matches(before["model+language"]))
        #expect(deltaBefore.matches(before["model+language-delta"]), "\(String(describing: before["model+language-delta"]))")
        #expect(constant.matches(before["default"]))

        // Filters and the other formats.
        let filtered = try runKBTD(["evaluate", "--database", daemon.database, "--format", "csv", "--os", "26", "--language", "ja-JP"])
        let lines = filtered.stdout.split(separator: "\n")
        #expect(lines.first == "basis,cases,mae_pt,p90_pt,within_0.5pt,default_mae_pt,default_p90_pt,default_within_0.5pt")
        #expect(lines.dropFirst().allSatisfy { $0.split(separator: ",")[1] == "\(fleet.models.count)" }, "\(lines)")
        let table = try runKBTD(["evaluate", "--database", daemon.database, "--format", "table"])
        #expect(table.status == 0 && table.stdout.contains("screen+language") && table.stdout.contains("72 answers"))
        #expect(try runKBTD(["evaluate", "--database", daemon.database, "--chain", "yesterday"]).status == 64)
    }

    @Test func exportRoundTripsIntoTheClientWhichServesItWithoutNetwork() async throws {
        let fleet = try ShiftedFleet(seed: 5)
        let daemon = try InProcessApp()
        try await fleet.load(into: daemon)
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("kbtd-heights.json")
        let export = try runKBTD(["export", "--database", daemon.database, "--output", file.path])
        #expect(export.status == 0, "\(export.stderr)")
        let unwritable = try runKBTD(["export", "--database", daemon.database, "--output", directory.appendingPathComponent("no/such/dir.json").path])
        #expect(unwritable.status == 73 && unwritable.stderr.contains("--output"), "\(unwritable.stderr)")
        let toStdout = try runKBTD(["export", "--database", daemon.database])
        #expect(toStdout.stdout == (try String(contentsOf: file, encoding: .utf8)))

        // The table holds what /v1/heights serves without `os`.
        let document = try JSONParser.parse(Array(try Data(contentsOf: file)))
        #expect(document["format"] == .string("kbtd-height-table") && document["version"] == .number(1))
        for model in fleet.models {
            let served = try #require(try await daemon.get("/v1/heights?model=\(model.identifier)").json)
            for estimate in served["estimates"]?.array ?? [] {
                let key = "\(estimate["language"]?.string ?? "")|\(estimate["orientation"]?.string ?? "")|\(estimate["keyboard_type"]?.string ?? "")"
                #expect(document["models"]?[model.identifier]?["heights"]?[key] == estimate["height"], "\(model.identifier) \(key)")
            }
            #expect(document["models"]?[model.identifier]?["screen"] == .string(model.screen))
        }

        // Nothing listens on this port: every answer comes from the table.
        let table = try BundledHeightTable(contentsOf: file)
        #expect(table.modelCount == fleet.models.count)
        let known = fleet.models[1]
        func client(_ model: String, screen: String?, in name: String, os: String = "26.1") throws -> KeyboardTelemetryClient {
            var configuration = ClientFixtures.configuration(port: unreachablePort(), directory: directory.appendingPathComponent(name))
            configuration.bundledHeights = table
            configuration.screen = screen
            return KeyboardTelemetryClient(device: TelemetryDevice(model: model, os: os), configuration: configuration)
        }
        // The table's answers per OS major (`os`): a phone on iOS 26 gets iOS 26's height, as
        // `/v1/heights?os=26.1` serves it, not the any-OS mode (iOS 18's 40 samples outvote 26's 30).
        let served = try #require(try await daemon.get("/v1/heights?model=\(known.identifier)&os=26.1").json)
        let servedJapanese = served["estimates"]?.array?.first { $0["language"] == .string("ja-JP") && $0["orientation"] == .string("portrait") }
        #expect(servedJapanese?["height"]?.double == fleet.truth(known, major: 26, language: "ja-JP"))
        let knownClient = try client(known.identifier, screen: nil, in: "known")
        #expect(await knownClient.refreshHeights(force: true) != .updated)
        #expect(knownClient.heightEstimate(language: "ja-JP", orientation: .portrait)
                == .init(height: fleet.truth(known, major: 26, language: "ja-JP"), source: .bundled))
        await knownClient.shutdown()
        let olderClient = try client(known.identifier, screen: nil, in: "older", os: "18.6")
        #expect(olderClient.heightEstimate(language: "ja-JP", orientation: .portrait)
                == .init(height: fleet.truth(known, major: 18, language: "ja-JP"), source: .bundled))
        await olderClient.shutdown()
        let knownOnIOS26 = try client(known.identifier, screen: nil, in: "known-again")
        // A language the model never reported: the model's own any-language height.
        #expect(knownOnIOS26.heightEstimate(language: "fr-FR", orientation: .portrait).source == .bundled)
        // Landscape was never measured: the configured constant.
        #expect(knownOnIOS26.heightEstimate(language: "en-US", orientation: .landscape) == .init(height: 209, source: .configuredDefault))
        await knownOnIOS26.shutdown()

        // A model released this morning, with the screen of a known one.
        let newClient = try client("iPhone99,2", screen: known.screen, in: "new")
        #expect(newClient.heightEstimate(language: "ja-JP", orientation: .portrait)
                == .init(height: fleet.truth(known, major: 18, language: "ja-JP"), source: .bundled))
        await newClient.shutdown()
        let unknownScreen = try client("iPhone99,2", screen: "1x1", in: "unknown")
        #expect(unknownScreen.heightEstimate(language: "ja-JP", orientation: .portrait) == .init(height: 335, source: .configuredDefault))
        await unknownScreen.shutdown()

        #expect(throws: BundledHeightTable.FormatError.self) { try BundledHeightTable(data: Data(#"{"format":"kbtd-height-table","version":2}"#.utf8)) }
        #expect(throws: BundledHeightTable.FormatError.self) { try BundledHeightTable(data: Data("[]".utf8)) }
    }

    @Test func clientSendsItsScreenAndAsksWithIt() async throws {
        let fleet = try ShiftedFleet(seed: 9)
        let daemon = try TestDaemon().start()
        let port = daemon.port
        try fleet.load(into: daemon)
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let known = fleet.models[4]
        var configuration = ClientFixtures.configuration(port: port, directory: directory)
        configuration.screen = known.screen
        let client = KeyboardTelemetryClient(device: TelemetryDevice(model: "iPhone99,3", os: "26.1"), configuration: configuration)
        // The server's answer for a model it never saw comes from the screen level.
        #expect(await client.refreshHeights(force: true) == .updated)
        #expect(client.heightEstimate(language: "ja-JP", orientation: .portrait)
                == .init(height: fleet.truth(known, major: 26, language: "ja-JP"), source: .server(basis: "screen+language")))
        client.start()
        client.record(ClientFixtures.show(0, language: "en-US", height: 330))
        await client.flush()
        #expect(await client.waitForDelivery(timeout: 60))
        await client.shutdown()
        let counts = try SQLiteTelemetryStore(path: daemon.database, access: .readOnly).loadCounts()
        #expect(counts.screens[ModelScreenKey(model: "iPhone99,3", screen: try #require(ScreenSize(known.screen)))] == 1)
    }
}
