import Synchronization

/// The running settings, replaceable as a whole (SIGHUP reload) while
/// requests read them.
public final class SettingsBox: Sendable {
    private let value: Mutex<ServerSettings>

    public init(_ settings: ServerSettings) {
        value = Mutex(settings)
    }

    public var current: ServerSettings { value.withLock { $0 } }

    /// `current.cacheMaxAge` without a copy of every setting: a cached answer's check, on every request.
    var cacheMaxAge: Int { value.withLock { $0.cacheMaxAge } }

    public func replace(_ settings: ServerSettings) {
        value.withLock { $0 = settings }
    }
}
