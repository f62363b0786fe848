import Foundation
import KBTDCompression
import KBTDCore

/// One sample as a phone would send it; every field can be set or left out.
struct TestSample {
    var t: Double = Date().timeIntervalSince1970
    var event = "show"
    var language = "en-US"
    var orientation = "portrait"
    var keyboardType: String?
    var height: Double = 336
    var accessoryHeight: Double?
    var safeAreaBottom: Double?
    var duration: Double = 0.25
    var curve = 7
    var coldStartMs: Double?
    var preloaded: Bool?
    var floating: Bool?
    var hardwareKeyboard: Bool?

    var json: JSONOutput {
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
func batchBody(id: String = UUID().uuidString, model: String = "iPhone17,1", os: String = "26.1",
               screen: String? = nil, samples: [TestSample]) -> [UInt8] {
    batchBody(id: id, model: model, os: os, screen: screen, rawSamples: samples.map(\.json))
}

func batchBody(id: String = UUID().uuidString, model: String = "iPhone17,1", os: String = "26.1",
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

func gzip(_ bytes: [UInt8]) -> [UInt8] { Deflater.compress(bytes, format: .gzip) }

/// `n` docked show samples of one height.
func shows(_ n: Int, height: Double, language: String = "en-US", orientation: String = "portrait",
           keyboardType: String? = nil) -> [TestSample] {
    (0..<n).map { _ in TestSample(language: language, orientation: orientation, keyboardType: keyboardType, height: height) }
}

/// Looks up a stats row for a key in `kbtd stats --format json` output.
func statsRow(_ stats: JSONValue, model: String, language: String, orientation: String = "portrait",
              osMajor: Int? = nil) -> JSONValue? {
    guard case .array(let rows)? = stats["stats"] else { return nil }
    return rows.first { row in
        row["model"] == .string(model) && row["language"] == .string(language)
            && row["orientation"] == .string(orientation) && (osMajor == nil || row["os_major"] == .number(Double(osMajor!)))
    }
}

extension JSONValue {
    var double: Double? {
        if case .number(let value) = self { return value }
        return nil
    }
    var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }
    var array: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }
}
