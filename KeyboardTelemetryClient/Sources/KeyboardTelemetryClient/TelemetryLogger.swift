import Foundation

/// How loud a client log message is.
public enum TelemetryLogLevel: Int, Sendable, Comparable, CustomStringConvertible {
    case debug, info, warning, error

    /// Orders levels from `debug` to `error`.
    public static func < (a: TelemetryLogLevel, b: TelemetryLogLevel) -> Bool { a.rawValue < b.rawValue }

    public var description: String {
        switch self {
        case .debug: "debug"
        case .info: "info"
        case .warning: "warning"
        case .error: "error"
        }
    }
}

/// Where the client's log messages go. The default writes warnings and
/// errors to standard error; pass your own handler to route them to
/// `os.Logger`, a crash reporter, or a test.
public struct TelemetryLogger: Sendable {
    /// Receives every message at or above `minimumLevel`.
    public var handler: @Sendable (TelemetryLogLevel, String) -> Void
    /// Messages below this level are not built at all.
    public var minimumLevel: TelemetryLogLevel

    /// A logger that hands messages at or above `minimumLevel` to `handler`.
    public init(minimumLevel: TelemetryLogLevel = .warning,
                handler: @escaping @Sendable (TelemetryLogLevel, String) -> Void) {
        self.minimumLevel = minimumLevel
        self.handler = handler
    }

    /// Warnings and errors to standard error, one line each.
    public static let standardError = TelemetryLogger { level, message in
        FileHandle.standardError.write(Data("KeyboardTelemetryClient \(level): \(message)\n".utf8))
    }

    /// Discards everything.
    public static let silent = TelemetryLogger(minimumLevel: .error) { _, _ in }

    func log(_ level: TelemetryLogLevel, _ message: @autoclosure () -> String) {
        guard level >= minimumLevel else { return }
        handler(level, message())
    }
}
