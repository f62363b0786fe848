import Foundation
import KBTDCompression
import KBTDCore
import KBTDStore

/// One sample as a phone would send it; every field can be set or left out.
package struct TestSample {
    package var t: Double = Date().timeIntervalSince1970
    package var event = "show"
    package var language = "en-US"
    package var orientation = "portrait"
    package var keyboardType: String?
    package var height: Double = 336
    package var accessoryHeight: Double?
    package var safeAreaBottom: Double?
    package var duration: Double = 0.25
    package var curve = 7
    package var coldStartMs: Double?
    package var preloaded: Bool?
    package var floating: Bool?
    package var hardwareKeyboard: Bool?

    package init(t: Double = Date().timeIntervalSince1970, event: String = "show", language: String = "en-US",
                 orientation: String = "portrait", keyboardType: String? = nil, height: Double = 336,
                 accessoryHeight: Double? = nil, safeAreaBottom: Double? = nil, duration: Double = 0.25, curve: Int = 7,
                 coldStartMs: Double? = nil, preloaded: Bool? = nil, floating: Bool? = nil, hardwareKeyboard: Bool? = nil) {
        self.t = t
        self.event = event
        self.language = language
        self.orientation = orientation
        self.keyboardType = keyboardType
        self.height = height
        self.accessoryHeight = accessoryHeight
        self.safeAreaBottom = safeAreaBottom
        self.duration = duration
        self.curve = curve
        self.coldStartMs = coldStartMs
        self.preloaded = preloaded
        self.floating = floating
        self.hardwareKeyboard = hardwareKeyboard
    }

    package var json: JSONOutput {
        var members: [(String, JSONOutput)] = [
            ("t", .double(t)), ("event", .string(event)), ("language", .string(language)),
            ("orientation", .string(orientation)), ("height", .double(height)),
            ("duration", .double(duration)), ("curve", .int(Int64(curve))),
        ]
        if let keyboardType { members.append(("keyboard_type", .string(keyboardType))) }
        if let accessoryHeight { members.append(("accessory_height", .double(accessoryHeight))) }
        if let safeAreaBottom { members.append(("safe_area_bottom", .double(safeAreaBottom))) }
        if let coldStartMs { members.append(("cold_start_ms", .double(coldStartMs))) }
        if let preloaded { members.append(("preloaded", .bool(preloaded))) }
        if let floating { members.append(("floating", .bool(floating))) }
        if let hardwareKeyboard { members.append(("hardware_keyboard", .bool(hardwareKeyboard))) }
        return .object(members)
    }
}

/// A batch body as JSON bytes.
package func batchBody(id: String = UUID().uuidString, model: String = "iPhone17,1", os: String = "26.1",
               screen: String? = nil, samples: [TestSample]) -> [UInt8] {
    batchBody(id: id, model: model, os: os, screen: screen, rawSamples: samples.map(\.json))
}

package func batchBody(id: String = UUID().uuidString, model: String = "iPhone17,1", os: String = "26.1",
               screen: String? = nil, rawSamples: [JSONOutput]) -> [UInt8] {
    var device: [(String, JSONOutput)] = [("model", .string(model)), ("os", .string(os)), ("app", .string("com.example.chat")),
                                          ("app_version", .string("3.2.0"))]
    if let screen { device.append(("screen", .string(screen))) }
    let document = JSONOutput.object([
        ("batch_id", .string(id)),
        ("device", .object(device)),
        ("samples", .array(rawSamples)),
    ])
    return Array(document.serialized().utf8)
}

package func gzip(_ bytes: [UInt8]) -> [UInt8] { Deflater.compress(bytes, format: .gzip) }

/// `n` docked show samples of one height.
package func shows(_ n: Int, height: Double, language: String = "en-US", orientation: String = "portrait",
           keyboardType: String? = nil) -> [TestSample] {
    (0..<n).map { _ in TestSample(language: language, orientation: orientation, keyboardType: keyboardType, height: height) }
}

/// Looks up a stats row for a key in `kbtd stats --format json` output.
package func statsRow(_ stats: JSONValue, model: String, language: String, orientation: String = "portrait",
              osMajor: Int? = nil) -> JSONValue? {
    guard case .array(let rows)? = stats["stats"] else { return nil }
    return rows.first { row in
        row["model"] == .string(model) && row["language"] == .string(language)
            && row["orientation"] == .string(orientation) && (osMajor == nil || row["os_major"] == .number(Double(osMajor!)))
    }
}

extension JSONValue {
    package var double: Double? {
        if case .number(let value) = self { return value }
        return nil
    }
    package var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }
    package var array: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }
}

/// A batch as the intake hands it to a store (the store tests commit these directly).
package func pendingBatch(_ id: String, receivedAt: Int64 = 1_000, model: String = "iPhone17,1", language: String = "en-US",
                  heights: [Double] = [336], source: SourceID = .trusted, screen: ScreenSize? = nil) -> PendingBatch {
    var delta = AggregateDelta()
    let device = Device(model: model, os: "26.1", osMajor: 26)
    for (i, height) in heights.enumerated() {
        delta.add(Sample(t: 0, event: i % 3 == 2 ? .hide : .show, language: language, orientation: i % 4 == 3 ? .landscape : .portrait,
                         height: height, safeAreaBottom: 34, duration: 0.25, curve: 7,
                         coldStartMs: i % 2 == 0 ? 200 + Double(i) : nil, preloaded: i % 4 == 0), device: device)
    }
    if let screen { delta.screens[ModelScreenKey(model: model, screen: screen), default: 0] += 1 }
    if source != .trusted {
        var policy = SourcePolicy()
        policy.apply(to: &delta, source: source, now: 1_000_000)
    }
    var batch = PendingBatch(batchID: id, receivedAt: receivedAt, model: model, os: "26.1", accepted: heights.count, rejected: 1,
                             delta: delta)
    batch.source = source
    return batch
}
