#if canImport(UIKit) && os(iOS)
import UIKit

// UIKit seams: the device, the screen from the window scene, a keyboard notification's sample
// (KeyboardNotificationRecorder.swift wires the notifications and background time). iOS and Mac
// Catalyst only: kbtd's CI (Linux) does not compile this file.

extension TelemetryDevice {
    /// This device: the machine identifier from `uname` (the simulated model's on the simulator),
    /// and the OS version (no bundle identifier or app version: see below).
    public static func current() -> TelemetryDevice {
        var info = utsname()
        uname(&info)
        let machine = withUnsafeBytes(of: &info.machine) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        let model = ProcessInfo.processInfo.environment["SIMULATOR_MODEL_IDENTIFIER"] ?? machine
        // No bundle identifier or app version: kbtd stores neither (docs/privacy.md); an app that wants
        // them sent anyway passes `mainBundleApp()` to `TelemetryDevice(model:os:app:appVersion:)`.
        return TelemetryDevice(model: model, os: versionString(ProcessInfo.processInfo.operatingSystemVersion))
    }
}

extension TelemetryConfiguration {
    /// The screen of a window scene in points, portrait (`393x852`), for `screen`: pass
    /// `view.window?.windowScene` or the scene your scene delegate was given.
    @MainActor
    public static func screenSize(of windowScene: UIWindowScene) -> String {
        let bounds = windowScene.screen.bounds
        let short = Int(min(bounds.width, bounds.height).rounded())
        let long = Int(max(bounds.width, bounds.height).rounded())
        return "\(short)x\(long)"
    }
}

extension KeyboardSample {
    /// Reads `keyboardFrameEndUserInfoKey`, `keyboardAnimationDurationUserInfoKey` and
    /// `keyboardAnimationCurveUserInfoKey` from a keyboard notification; the caller adds what
    /// only the app knows. Nil when the notification carries no end frame.
    @MainActor
    public init?(keyboardNotification notification: Notification, event: KeyboardEvent, language: String,
                 orientation: KeyboardOrientation, keyboardType: KeyboardType = .default, accessoryHeight: Double = 0,
                 safeAreaBottom: Double = 0, floating: Bool = false, hardwareKeyboard: Bool = false) {
        guard let info = notification.userInfo,
              let frame = (info[UIResponder.keyboardFrameEndUserInfoKey] as? NSValue)?.cgRectValue else { return nil }
        let duration = (info[UIResponder.keyboardAnimationDurationUserInfoKey] as? NSNumber)?.doubleValue ?? 0
        let curve = (info[UIResponder.keyboardAnimationCurveUserInfoKey] as? NSNumber)?.intValue ?? 0
        self.init(event: event, height: Double(frame.height), accessoryHeight: accessoryHeight,
                  safeAreaBottom: safeAreaBottom, duration: duration, curve: curve, language: language,
                  orientation: orientation, keyboardType: keyboardType, floating: floating,
                  hardwareKeyboard: hardwareKeyboard)
    }
}
#endif
