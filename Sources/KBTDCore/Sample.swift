/// What the keyboard notification reported for one event.
public enum KeyboardEvent: String, Sendable, CaseIterable, Hashable {
    case show, hide, change
}

/// Device orientation at the time of the event.
public enum Orientation: String, Sendable, CaseIterable, Hashable {
    case portrait, landscape
}

/// Where the keyboard sat. Only `docked` samples feed height estimates:
/// floating keyboards and hardware-keyboard shortcut bars say nothing about
/// the docked height an app must lay out for.
public enum Placement: String, Sendable, CaseIterable, Hashable {
    case docked, floating, hardware
}

/// The UIKeyboardType names the protocol accepts (docs/http-api.md).
public enum KeyboardTypes {
    public static let all: Set<String> = [
        "default", "asciiCapable", "numbersAndPunctuation", "URL", "numberPad", "phonePad",
        "namePhonePad", "emailAddress", "decimalPad", "twitter", "webSearch", "asciiCapableNumberPad",
    ]
}

/// The device that sent a batch.
public struct Device: Sendable, Equatable {
    public var model: String
    public var os: String
    /// The OS major version (`26` for `26.1`): heights are aggregated per major.
    public var osMajor: Int
    public var app: String?
    public var appVersion: String?
    /// The screen in points, portrait, when the client sent `device.screen`.
    public var screen: ScreenSize?

    public init(model: String, os: String, osMajor: Int, app: String? = nil, appVersion: String? = nil,
                screen: ScreenSize? = nil) {
        self.model = model
        self.os = os
        self.osMajor = osMajor
        self.app = app
        self.appVersion = appVersion
        self.screen = screen
    }
}

/// One validated keyboard measurement.
public struct Sample: Sendable, Equatable {
    public var t: Double
    public var event: KeyboardEvent
    public var language: String
    public var orientation: Orientation
    public var keyboardType: String
    public var height: Double
    public var accessoryHeight: Double
    public var safeAreaBottom: Double
    public var duration: Double
    public var curve: Int
    public var coldStartMs: Double?
    public var preloaded: Bool
    public var floating: Bool
    public var hardwareKeyboard: Bool

    public init(
        t: Double, event: KeyboardEvent, language: String, orientation: Orientation,
        keyboardType: String = "default", height: Double, accessoryHeight: Double = 0,
        safeAreaBottom: Double = 0, duration: Double, curve: Int, coldStartMs: Double? = nil,
        preloaded: Bool = false, floating: Bool = false, hardwareKeyboard: Bool = false
    ) {
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

    /// The system keyboard's own height: the reported frame includes the app's
    /// inputAccessoryView, which says nothing about the keyboard.
    public var systemHeight: Double { height - accessoryHeight }

    public var placement: Placement {
        if hardwareKeyboard { return .hardware }
        if floating { return .floating }
        return .docked
    }
}

/// A batch whose batch-level fields are valid, with the samples that passed
/// and the reasons the others did not.
public struct ValidatedBatch: Sendable {
    /// Lower-cased canonical UUID: the idempotency key.
    public var batchID: String
    public var device: Device
    public var samples: [Sample]
    public var rejected: [SampleError]

    public init(batchID: String, device: Device, samples: [Sample], rejected: [SampleError]) {
        self.batchID = batchID
        self.device = device
        self.samples = samples
        self.rejected = rejected
    }
}

/// A sample rejected on its own (the rest of its batch is stored): its index
/// in `samples` and the `FieldError` at fault.
public struct SampleError: Sendable, Equatable {
    public var index: Int
    public var error: FieldError

    public init(index: Int, _ error: FieldError) {
        self.index = index
        self.error = error
    }

    public init(index: Int, field: String, reason: String) {
        self.init(index: index, FieldError(field: field, reason: reason))
    }

    public var field: String { error.field }
    public var reason: String { error.reason }
}

