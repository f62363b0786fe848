import Foundation
import Logging
import Synchronization

/// The daemon's log level, shared by every logger so SIGHUP can change it live.
public final class LogLevelControl: Sendable {
    private let level: Mutex<Logger.Level>

    public init(_ level: Logger.Level) {
        self.level = Mutex(level)
    }

    public var current: Logger.Level {
        get { level.withLock { $0 } }
        set { level.withLock { $0 = newValue } }
    }
}

/// One line per event on stderr, never colour. When stderr is the journal
/// (`JOURNAL_STREAM` names stderr's device and inode), each line starts with
/// its syslog priority (`<3>` error, `<6>` info ...) and carries no timestamp:
/// journald stamps and classifies it. Otherwise lines start with an ISO time.
public struct JournalLogHandler: LogHandler {
    public let label: String
    public var metadata: Logger.Metadata = [:]
    let control: LogLevelControl
    let toJournal: Bool

    public init(label: String, control: LogLevelControl, toJournal: Bool = JournalLogHandler.stderrIsJournal()) {
        self.label = label
        self.control = control
        self.toJournal = toJournal
    }

    /// Set on one logger, it applies to that logger (and its copies) only, as
    /// swift-log expects of a handler; unset, the daemon-wide level (`control`,
    /// which SIGHUP changes) applies.
    private var ownLevel: Logger.Level?

    public var logLevel: Logger.Level {
        get { ownLevel ?? control.current }
        set { ownLevel = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Metadata printed only at debug and trace: a client's address (`client`) is
    /// personal data, kept out of logs at info and above (docs/privacy.md).
    public static let debugOnlyMetadata: Set<String> = ["client"]

    public func log(event: LogEvent) {
        FileHandle.standardError.write(Data(line(for: event).utf8))
    }

    /// The line `log(event:)` writes for `event`, newline included.
    public func line(for event: LogEvent) -> String {
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        if event.level > .debug {
            for key in Self.debugOnlyMetadata { merged[key] = nil }
        }
        var line = toJournal ? "<\(Self.priority(event.level))>" : "\(Self.timestamp()) \(event.level.rawValue.uppercased()) "
        line += Self.singleLine("\(event.message)")
        if !merged.isEmpty {
            line += " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\(Self.singleLine("\($0.value)"))" }.joined(separator: " ")
        }
        line += "\n"
        return line
    }

    /// syslog priorities (RFC 5424) as journald reads them from `<N>` prefixes.
    static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// One event, one line: newlines in messages would split an event in the journal.
    static func singleLine(_ text: String) -> String {
        text.replacingOccurrences(of: "\n", with: "\\n").replacingOccurrences(of: "\r", with: "\\r")
    }

    /// ISO 8601 in UTC with milliseconds, for lines that do not go to the journal.
    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let parts = UTCTime(seconds: Int(now.tv_sec)).parts
        let pad = UTCTime.padded
        return "\(parts.tm_year + 1900)-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(now.tv_nsec / 1_000_000), 3))Z"
    }

    /// True when `JOURNAL_STREAM` (`device:inode`) matches stderr, as systemd.exec(5) describes.
    public static func stderrIsJournal(environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        guard let value = environment["JOURNAL_STREAM"] else { return false }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var info = stat()
        guard fstat(STDERR_FILENO, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }
}
