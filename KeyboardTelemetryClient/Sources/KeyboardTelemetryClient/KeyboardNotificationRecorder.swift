#if canImport(UIKit) && os(iOS)
import UIKit

// The keyboard notifications and background time, for UIKit apps. iOS and Mac Catalyst only: kbtd's
// CI (Linux) does not compile this file.

/// The one way to wire keyboard notifications: records show, change (while the keyboard stays up)
/// and hide for one text view or field, measured in its window. Keep it as long as the screen lives;
/// it stops observing when released.
///
/// ```swift
/// keyboard = KeyboardNotificationRecorder(client: telemetry, input: textView)
/// inputBarBottom.constant = -keyboard.estimatedHeight()   // before the keyboard ever showed
/// ```
@MainActor
public final class KeyboardNotificationRecorder: NSObject {
    private let client: KeyboardTelemetryClient
    private weak var input: UIView?
    private var visible = false

    /// Records the keyboard of `input` (a `UITextView` or `UITextField`).
    public init(client: KeyboardTelemetryClient, input: UIView) {
        self.client = client
        self.input = input
        super.init()
        let center = NotificationCenter.default
        center.addObserver(self, selector: #selector(keyboardWillShow(_:)), name: UIResponder.keyboardWillShowNotification, object: nil)
        center.addObserver(self, selector: #selector(keyboardWillChangeFrame(_:)),
                           name: UIResponder.keyboardWillChangeFrameNotification, object: nil)
        center.addObserver(self, selector: #selector(keyboardWillHide(_:)), name: UIResponder.keyboardWillHideNotification, object: nil)
    }

    /// The input's keyboard language (`UITextInputMode.primaryLanguage`), `und` when unknown.
    public var language: String { input?.textInputMode?.primaryLanguage ?? "und" }

    /// The orientation of the input's window scene.
    public var orientation: KeyboardOrientation {
        input?.window?.windowScene?.interfaceOrientation.isLandscape == true ? .landscape : .portrait
    }

    /// The input's keyboard type.
    public var keyboardType: KeyboardType {
        let raw = (input as? UITextView)?.keyboardType.rawValue ?? (input as? UITextField)?.keyboardType.rawValue ?? 0
        return KeyboardType(uiKeyboardTypeRawValue: raw) ?? .default
    }

    /// The system keyboard's height to lay out for before it shows (add your accessory view).
    public func estimatedHeight() -> Double {
        client.estimatedHeight(language: language, orientation: orientation, keyboardType: keyboardType)
    }

    @objc private func keyboardWillShow(_ note: Notification) {
        visible = true
        record(note, .show)
    }

    @objc private func keyboardWillChangeFrame(_ note: Notification) {
        // Also posted around every show and hide: record only changes while the keyboard stays up
        // (the QuickType bar appearing after the first show, a switch to emoji).
        guard visible, let frame = (note.userInfo?[UIResponder.keyboardFrameEndUserInfoKey] as? NSValue)?.cgRectValue,
              let window = input?.window, frame.minY < window.bounds.height else { return }
        record(note, .change)
    }

    @objc private func keyboardWillHide(_ note: Notification) {
        visible = false
        record(note, .hide)
    }

    private func record(_ note: Notification, _ event: KeyboardEvent) {
        guard let input, input.isFirstResponder else { return }
        let frame = (note.userInfo?[UIResponder.keyboardFrameEndUserInfoKey] as? NSValue)?.cgRectValue ?? .zero
        let windowWidth = input.window?.bounds.width ?? frame.width
        guard let sample = KeyboardSample(
            keyboardNotification: note, event: event, language: language, orientation: orientation,
            keyboardType: keyboardType, accessoryHeight: Double(input.inputAccessoryView?.frame.height ?? 0),
            safeAreaBottom: Double(input.window?.safeAreaInsets.bottom ?? 0),
            floating: frame.width > 0 && frame.width < windowWidth,  // iPad undocked keyboard
            hardwareKeyboard: event != .hide && frame.height > 0 && frame.height < 100)  // only the shortcut bar
        else { return }
        client.record(sample)
    }
}

extension KeyboardTelemetryClient {
    /// `sendInBackground()` inside a background task: call when the app or scene enters the background.
    /// The task ends when the queue is sent or an attempt fails; if the time runs out first, the
    /// expiration handler calls `backgroundTimeExpired()` (the request in flight is cancelled, its
    /// batch stays queued) and ends the task.
    @MainActor
    @available(iOSApplicationExtension, unavailable)
    public func sendInBackground(application: UIApplication) {
        let task = BackgroundTaskHandle()
        task.identifier = application.beginBackgroundTask(withName: "KeyboardTelemetry") { [self] in
            backgroundTimeExpired()
            task.end(application)
        }
        Task { @MainActor in
            _ = await sendInBackground()
            task.end(application)
        }
    }
}

/// One background task's identifier, ended once, by whichever comes first.
@MainActor
private final class BackgroundTaskHandle {
    var identifier = UIBackgroundTaskIdentifier.invalid

    func end(_ application: UIApplication) {
        guard identifier != .invalid else { return }
        application.endBackgroundTask(identifier)
        identifier = .invalid
    }
}
#endif
