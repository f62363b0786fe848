import Foundation

/// Which keyboard notification a sample comes from.
public enum KeyboardEvent: String, Sendable, Codable, CaseIterable {
    /// `keyboardWillShowNotification`.
    case show
    /// `keyboardWillHideNotification`.
    case hide
    /// `keyboardWillChangeFrameNotification` while the keyboard stays on screen
    /// (the QuickType bar appearing, a language switch).
    case change
}

/// The interface orientation the keyboard was shown in.
public enum KeyboardOrientation: String, Sendable, Codable, CaseIterable {
    case portrait, landscape
}

/// `UIKeyboardType`, by the names kbtd uses on the wire.
public enum KeyboardType: String, Sendable, Codable, CaseIterable {
    case `default`, asciiCapable, numbersAndPunctuation, URL, numberPad, phonePad, namePhonePad
    case emailAddress, decimalPad, twitter, webSearch, asciiCapableNumberPad

    /// Maps `UIKeyboardType.rawValue` (0...11); `nil` for values this library does not know.
    /// (`UIKeyboardType.alphabet` is a deprecated alias of `asciiCapable` and has its raw value.)
    public init?(uiKeyboardTypeRawValue raw: Int) {
        let ordered: [KeyboardType] = [
            .default, .asciiCapable, .numbersAndPunctuation, .URL, .numberPad, .phonePad, .namePhonePad,
            .emailAddress, .decimalPad, .twitter, .webSearch, .asciiCapableNumberPad,
        ]
        guard ordered.indices.contains(raw) else { return nil }
        self = ordered[raw]
    }
}

/// One keyboard measurement, shaped after what a keyboard notification's
/// `userInfo` and the app around it know.
public struct KeyboardSample: Sendable, Equatable, Codable {
    /// When the notification arrived (sent as Unix seconds).
    public var timestamp: Date
    /// The notification: show, hide or change.
    public var event: KeyboardEvent
    /// `UITextInputMode.primaryLanguage` (`en-US`, `ja-JP`, `emoji`, `dictation`); `und` when unknown.
    public var language: String
    /// The interface orientation at the time.
    public var orientation: KeyboardOrientation
    /// The first responder's `keyboardType`.
    public var keyboardType: KeyboardType
    /// `keyboardFrameEndUserInfoKey`'s height in points: includes the input
    /// accessory view and, on Face ID phones, the bottom safe area.
    public var height: Double
    /// The height of the app's `inputAccessoryView` inside `height` (0 without one).
    public var accessoryHeight: Double
    /// The window's bottom safe-area inset (34 pt on Face ID phones in portrait).
    public var safeAreaBottom: Double
    /// `keyboardAnimationDurationUserInfoKey`, seconds.
    public var duration: Double
    /// `keyboardAnimationCurveUserInfoKey` (usually 7).
    public var curve: Int
    /// First show after launch only: milliseconds from asking for the keyboard to its will-show notification.
    public var coldStartMs: Double?
    /// First show after launch only: whether the app pre-warmed the keyboard.
    public var preloaded: Bool?
    /// An iPad floating (undocked) keyboard.
    public var floating: Bool
    /// A hardware keyboard is attached (only the shortcut bar shows).
    public var hardwareKeyboard: Bool

    /// A sample with the defaults a keyboard notification usually carries (0.25 s, curve 7, now).
    public init(event: KeyboardEvent, height: Double, accessoryHeight: Double = 0, safeAreaBottom: Double = 0,
                duration: Double = 0.25, curve: Int = 7, language: String, orientation: KeyboardOrientation,
                keyboardType: KeyboardType = .default, coldStartMs: Double? = nil, preloaded: Bool? = nil,
                floating: Bool = false, hardwareKeyboard: Bool = false, timestamp: Date = Date()) {
        self.timestamp = timestamp
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

    /// The system keyboard's own height: `height - accessoryHeight`.
    public var systemHeight: Double { height - accessoryHeight }

    /// Whether every number can be written as JSON (no NaN, no infinity).
    /// Other faults (a negative height, curve 99) are kbtd's to judge: it
    /// rejects such samples one by one and counts them.
    public var isEncodable: Bool {
        let numbers = [timestamp.timeIntervalSince1970, height, accessoryHeight, safeAreaBottom, duration, coldStartMs ?? 0]
        return numbers.allSatisfy(\.isFinite)
    }

    /// A docked show or change with a real height: the measurement `estimatedHeight` learns from.
    var isDockedMeasurement: Bool {
        event != .hide && !floating && !hardwareKeyboard && height > 0 && accessoryHeight >= 0 && accessoryHeight < height
    }
}
