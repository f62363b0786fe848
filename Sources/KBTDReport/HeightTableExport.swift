import KBTDCore

/// `kbtd export`: every estimate kbtd serves, as one compact JSON document an
/// app ships in its bundle, so the very first keyboard of a fresh install
/// (before any network answer) is laid out for the right height.
///
/// ```json
/// {"format": "kbtd-height-table", "version": 1,
///  "defaults": {"portrait": 335.0, "landscape": 209.0},
///  "models": {"iPhone17,1": {"screen": "402x874",
///                            "heights": {"en-US|portrait|default": 346.0},
///                            "default": {"portrait": 346.0}}},
///  "screens": {"402x874": {"en-US|portrait|default": 346.0}}}
/// ```
///
/// `heights` holds what `GET /v1/heights?model=M` answers without `os` (every
/// language, orientation and keyboard type the model has data for);
/// `default` what it answers for a language kbtd has not seen on the model
/// (left out when that would be the constant); `screens` the
/// `screen+language` answers, for models that are not in the table.
///
/// `os` (left out when empty) holds what `GET /v1/heights?model=M&os=...` answers where it
/// differs: under `"26"` the answers for OS 26 that differ from `heights`, and under
/// `"26.2"` the answers from release 26.2 on that differ from the answer just below it
/// (a point release that moved a keyboard, docs/fallback-chain.md "Point releases"). A
/// client on 26.3 takes the entry of the greatest listed release of its major at or below
/// its own, else its major's, else `heights`: `{"26": {"ja-JP|portrait|default": 380.0},
/// "26.2": {"ja-JP|portrait|default": 384.0}}`. Clients that predate `os` ignore it.
///
/// `screen_variants` (left out when empty) holds, per screen the model's phones reported, the
/// answers for that screen (`GET /v1/heights?model=M&screen=S`) where they differ from `heights`:
/// a Display Zoom phone renders another screen and has another keyboard,
/// `{"320x693": {"en-US|portrait|default": 319.0}}`. A client on that screen takes its entry
/// before `os` and `heights`; clients that predate it ignore it.
///
/// `cold_start` (left out when empty) holds, per OS major, the model's first-show latency
/// without and with pre-warming as `GET /v1/heights?model=M&os=N` answers it:
/// `{"26": {"without_prewarm": {"p50_ms": 412.5, "p90_ms": 1210.0, "samples": 340},
/// "with_prewarm": {"p50_ms": 38.0, "p90_ms": 95.0, "samples": 120}}}`.
public enum HeightTableExport {
    public static let format = "kbtd-height-table"
    public static let version = 1

    public static func document(_ index: HeightIndex, estimator: HeightEstimator) -> JSONOutput {
        var models: [(String, JSONOutput)] = []
        for model in index.keysByModel.keys.sorted() {
            var heights: [(String, JSONOutput)] = []
            for key in index.languages(ofModel: model).sorted() {
                let estimate = estimator.estimate(
                    HeightQuery(model: model, language: key.language, orientation: key.orientation,
                                keyboardType: key.keyboardType), in: index)
                guard estimate.basis != .default else { continue }
                heights.append((tableKey(key.language, key.orientation, key.keyboardType), .double(estimate.height)))
            }
            var defaults: [(String, JSONOutput)] = []
            for orientation in Orientation.allCases {
                guard let stats = index.model(ModelKey(model: model, orientation: orientation, keyboardType: "default")),
                      estimator.supports(stats) else { continue }
                let estimate = estimator.estimate(HeightQuery(model: model, language: "", orientation: orientation), in: index)
                defaults.append((orientation.rawValue, .double(estimate.height)))
            }
            var members: [(String, JSONOutput)] = []
            if let screen = index.primaryScreen(of: model) { members.append(("screen", .string(screen.description))) }
            members.append(("heights", .object(heights)))
            if !defaults.isEmpty { members.append(("default", .object(defaults))) }
            let releases = releaseHeights(model, heights: heights, index, estimator: estimator)
            if !releases.isEmpty { members.append(("os", .object(releases))) }
            let variants = screenVariants(model, heights: heights, index, estimator: estimator)
            if !variants.isEmpty { members.append(("screen_variants", .object(variants))) }
            let coldStarts: [(String, JSONOutput)] = index.osMajors.sorted().compactMap { major in
                estimator.coldStart(model: model, osMajor: major, in: index).map { ("\(major)", $0) }
            }
            if !coldStarts.isEmpty { members.append(("cold_start", .object(coldStarts))) }
            models.append((model, .object(members)))
        }
        var screens: [(String, JSONOutput)] = []
        for screen in index.screens.screens.sorted() {
            let screenModels = index.models(withScreen: screen)
            var keys = Set<ModelLanguageKey>()
            for model in screenModels {
                for key in index.languages(ofModel: model) {
                    keys.insert(ModelLanguageKey(model: "", language: key.language, orientation: key.orientation,
                                                 keyboardType: key.keyboardType))
                }
            }
            var heights: [(String, JSONOutput)] = []
            for key in keys.sorted() {
                let query = HeightQuery(model: "", language: key.language, orientation: key.orientation,
                                        keyboardType: key.keyboardType, screen: screen)
                guard let estimate = estimator.screenLanguage(query, in: index, fallback: nil) else { continue }
                heights.append((tableKey(key.language, key.orientation, key.keyboardType), .double(estimate.height)))
            }
            if !heights.isEmpty { screens.append((screen.description, .object(heights))) }
        }
        return .object([
            ("format", .string(format)),
            ("version", .int(Int64(version))),
            ("defaults", .object([
                ("portrait", .double(estimator.settings.defaultPortraitHeight)),
                ("landscape", .double(estimator.settings.defaultLandscapeHeight)),
            ])),
            ("models", .object(models)),
            ("screens", .object(screens)),
        ])
    }

    /// The model's `os` member: per OS major, the answers that differ from `heights` (the
    /// answers without an OS); per release of that major, from the first with release data
    /// (and from minor 0), the answers that differ from those just below it. Between two
    /// releases with data the estimator's answer cannot change (a release only moves answers
    /// from itself on), so "the greatest listed release at or below mine" is the answer.
    static func releaseHeights(_ model: String, heights: [(String, JSONOutput)], _ index: HeightIndex,
                               estimator: HeightEstimator) -> [(String, JSONOutput)] {
        var withoutOS: [String: JSONOutput] = [:]
        for (key, height) in heights { withoutOS[key] = height }
        let keys = index.languages(ofModel: model).sorted()
        var members: [(String, JSONOutput)] = []
        for major in index.osMajors.sorted() {
            var majorHeights: [(String, JSONOutput)] = []
            var releaseHeights: [Int: [(String, JSONOutput)]] = [:]
            let minors = Set([0]).union(index.releaseMinors[major] ?? []).sorted()
            for key in keys {
                func answer(_ minor: Int?) -> JSONOutput? {
                    let estimate = estimator.estimate(
                        HeightQuery(model: model, language: key.language, osMajor: major, osMinor: minor,
                                    orientation: key.orientation, keyboardType: key.keyboardType), in: index)
                    return estimate.basis == .default ? nil : .double(estimate.height)
                }
                let name = tableKey(key.language, key.orientation, key.keyboardType)
                guard let majorAnswer = answer(nil) else { continue }
                if majorAnswer != withoutOS[name] { majorHeights.append((name, majorAnswer)) }
                var below = majorAnswer
                for minor in minors {
                    guard let here = answer(minor), here != below else { continue }
                    releaseHeights[minor, default: []].append((name, here))
                    below = here
                }
            }
            if !majorHeights.isEmpty { members.append(("\(major)", .object(majorHeights))) }
            for minor in releaseHeights.keys.sorted() {
                members.append(("\(major).\(minor)", .object(releaseHeights[minor]!)))
            }
        }
        return members
    }

    /// The model's `screen_variants` member: per screen its phones reported (Display Zoom renders
    /// another one), the answers to `GET /v1/heights?model=M&screen=S` (no `os`) that differ from
    /// `heights`; screens with no such answer are left out.
    static func screenVariants(_ model: String, heights: [(String, JSONOutput)], _ index: HeightIndex,
                               estimator: HeightEstimator) -> [(String, JSONOutput)] {
        let withoutScreen = Dictionary(heights) { $1 }
        let keys = index.languages(ofModel: model).sorted()
        var members: [(String, JSONOutput)] = []
        for screen in (index.screens.countsByModel[model] ?? [:]).keys.sorted() {
            var differing: [(String, JSONOutput)] = []
            for key in keys {
                let estimate = estimator.estimate(
                    HeightQuery(model: model, language: key.language, orientation: key.orientation,
                                keyboardType: key.keyboardType, screen: screen), in: index)
                let name = tableKey(key.language, key.orientation, key.keyboardType)
                guard estimate.basis != .default, withoutScreen[name] != .double(estimate.height) else { continue }
                differing.append((name, .double(estimate.height)))
            }
            if !differing.isEmpty { members.append((screen.description, .object(differing))) }
        }
        return members
    }

    /// `language|orientation|keyboard_type`, the client's cache key too.
    public static func tableKey(_ language: String, _ orientation: Orientation, _ keyboardType: String) -> String {
        "\(language)|\(orientation.rawValue)|\(keyboardType)"
    }
}
