import Foundation

/// The device and app a client reports for; every batch carries it.
public struct TelemetryDevice: Sendable, Equatable, Codable {
    /// Machine identifier such as `iPhone17,1` or `iPad14,3` (from `uname`, not the marketing name).
    public var model: String
    /// OS version such as `26.1` or `18.6.2`.
    public var os: String
    /// Bundle identifier (optional).
    public var app: String?
    /// `CFBundleShortVersionString` (optional).
    public var appVersion: String?
    /// The screen in points, portrait, `WIDTHxHEIGHT` (`393x852`), sent as `device.screen` and as
    /// `screen=` in height queries: lets kbtd answer for a model it has no data for yet from models
    /// with the same screen. Optional; `TelemetryConfiguration.screen` overrides it.
    public var screen: String?

    /// A device as kbtd's `device` object describes it.
    public init(model: String, os: String, app: String? = nil, appVersion: String? = nil, screen: String? = nil) {
        self.model = model
        self.os = os
        self.app = app
        self.appVersion = appVersion
        self.screen = screen
    }

    /// Bundle identifier and version of the main bundle, when it has them.
    public static func mainBundleApp() -> (app: String?, version: String?) {
        (Bundle.main.bundleIdentifier, Bundle.main.infoDictionary?["CFBundleShortVersionString"] as? String)
    }

    /// `26.1`, or `18.6.2` when there is a patch level.
    public static func versionString(_ version: OperatingSystemVersion) -> String {
        var text = "\(version.majorVersion).\(version.minorVersion)"
        if version.patchVersion != 0 { text += ".\(version.patchVersion)" }
        return text
    }
}
