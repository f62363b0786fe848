import Foundation
import KBTDCore
import Logging

/// One configuration key, declared once: its name (the config file key; the
/// `KBTD_*` variable is its upper-case twin), a one-line doc, whether SIGHUP
/// applies it, how its text is parsed into `ServerSettings` and how the
/// value is shown (which also tells the reload which keys changed).
///
///     Setting.int("max_keys", "Distinct keys stored.", reloadable: true, 1...100_000_000, \.keys.maxKeys)
public struct Setting: Sendable {
    public let key: String
    public let doc: String
    /// False: a changed value is logged at reload and takes effect after a restart.
    public let reloadable: Bool
    /// The `kbtd serve` option that sets it (`--unix` for `unix_socket`), if it has one.
    public let flag: String?
    /// Sets the value from `text`; returns the rule `text` breaks, nil when it is valid.
    let parse: @Sendable (String, inout ServerSettings) -> String?
    /// The value in `settings`, as text (compared by the reload, shown by `default`).
    let show: @Sendable (ServerSettings) -> String

    /// The built-in default, as text.
    public var defaultValue: String { show(ServerSettings()) }

    /// The `KBTD_*` environment variable that sets it.
    public var environmentVariable: String { "KBTD_" + key.uppercased() }

    init(_ key: String, _ doc: String, reloadable: Bool, flag: String? = nil,
         parse: @escaping @Sendable (String, inout ServerSettings) -> String?,
         show: @escaping @Sendable (ServerSettings) -> String) {
        self.key = key
        self.doc = doc
        self.reloadable = reloadable
        self.flag = flag
        self.parse = parse
        self.show = show
    }

    static func int(_ key: String, _ doc: String, reloadable: Bool, _ range: ClosedRange<Int>,
                    _ path: any WritableKeyPath<ServerSettings, Int> & Sendable) -> Setting {
        Setting(key, doc, reloadable: reloadable, parse: { text, settings in
            guard let number = Int(text), range.contains(number) else {
                return "must be an integer in \(range.lowerBound)...\(range.upperBound)"
            }
            settings[keyPath: path] = number
            return nil
        }, show: { String($0[keyPath: path]) })
    }

    static func double(_ key: String, _ doc: String, reloadable: Bool, _ range: ClosedRange<Double>,
                       _ path: any WritableKeyPath<ServerSettings, Double> & Sendable) -> Setting {
        Setting(key, doc, reloadable: reloadable, parse: { text, settings in
            guard let number = Double(text), number.isFinite, range.contains(number) else {
                return "must be a number in \(range.lowerBound)...\(range.upperBound)"
            }
            settings[keyPath: path] = number
            return nil
        }, show: { String($0[keyPath: path]) })
    }

    static func bool(_ key: String, _ doc: String, reloadable: Bool,
                     _ path: any WritableKeyPath<ServerSettings, Bool> & Sendable) -> Setting {
        Setting(key, doc, reloadable: reloadable, parse: { text, settings in
            switch text.lowercased() {
            case "true", "yes", "1": settings[keyPath: path] = true
            case "false", "no", "0": settings[keyPath: path] = false
            default: return "must be true or false"
            }
            return nil
        }, show: { String($0[keyPath: path]) })
    }

    /// An octal file mode such as 0660.
    static func fileMode(_ key: String, _ doc: String, reloadable: Bool,
                         _ path: any WritableKeyPath<ServerSettings, UInt32> & Sendable) -> Setting {
        Setting(key, doc, reloadable: reloadable, parse: { text, settings in
            guard let parsed = UInt32(text, radix: 8), parsed <= 0o777 else { return "must be an octal file mode such as 0660" }
            settings[keyPath: path] = parsed
            return nil
        }, show: { "0" + String($0[keyPath: path], radix: 8) })
    }

    /// Text where empty means none.
    static func optionalText(_ key: String, _ doc: String, reloadable: Bool, flag: String? = nil,
                             _ path: any WritableKeyPath<ServerSettings, String?> & Sendable) -> Setting {
        Setting(key, doc, reloadable: reloadable, flag: flag, parse: { text, settings in
            if !text.isEmpty { settings[keyPath: path] = text }
            return nil
        }, show: { $0[keyPath: path] ?? "" })
    }
}
