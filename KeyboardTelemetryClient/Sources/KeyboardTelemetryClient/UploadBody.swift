import Foundation

/// Writes the body of `POST /v1/batches` (docs/http-api.md) by hand: the field
/// order is fixed and numbers use Swift's shortest round-trip form.
enum UploadBody {
    static func json(batchID: UUID, device: TelemetryDevice, samples: [KeyboardSample]) -> Data {
        var out = "{\"batch_id\":"
        string(batchID.uuidString.lowercased(), to: &out)
        out += ",\"device\":{\"model\":"
        string(device.model, to: &out)
        out += ",\"os\":"
        string(device.os, to: &out)
        if let app = device.app {
            out += ",\"app\":"
            string(app, to: &out)
        }
        if let version = device.appVersion {
            out += ",\"app_version\":"
            string(version, to: &out)
        }
        if let screen = device.screen {
            out += ",\"screen\":"
            string(screen, to: &out)
        }
        out += "},\"samples\":["
        for (i, sample) in samples.enumerated() {
            if i > 0 { out += "," }
            write(sample, to: &out)
        }
        out += "]}"
        return Data(out.utf8)
    }

    private static func write(_ sample: KeyboardSample, to out: inout String) {
        // Whole seconds: kbtd only checks a sample's age, and the moment someone opened the keyboard
        // is not sent more precisely than that needs (docs/privacy.md).
        out += "{\"t\":\(number(sample.timestamp.timeIntervalSince1970.rounded(.down))),\"event\":\"\(sample.event.rawValue)\",\"language\":"
        string(sample.language, to: &out)
        out += ",\"orientation\":\"\(sample.orientation.rawValue)\",\"keyboard_type\":\"\(sample.keyboardType.rawValue)\""
        out += ",\"height\":\(number(sample.height)),\"accessory_height\":\(number(sample.accessoryHeight))"
        out += ",\"safe_area_bottom\":\(number(sample.safeAreaBottom)),\"duration\":\(number(sample.duration))"
        out += ",\"curve\":\(sample.curve)"
        if let cold = sample.coldStartMs { out += ",\"cold_start_ms\":\(number(cold))" }
        if let preloaded = sample.preloaded { out += ",\"preloaded\":\(preloaded)" }
        if sample.floating { out += ",\"floating\":true" }
        if sample.hardwareKeyboard { out += ",\"hardware_keyboard\":true" }
        out += "}"
    }

    /// A finite double as JSON (callers filter out NaN and infinity first).
    static func number(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    static func string(_ value: String, to out: inout String) {
        out += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
