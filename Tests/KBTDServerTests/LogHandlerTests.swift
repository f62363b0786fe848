import KBTDServer
import Logging
import Testing

@Suite("Log handler")
struct LogHandlerTests {
    /// swift-log: setting `logLevel` on one logger changes that logger, not every other one.
    @Test func aLoggersOwnLevelIsItsOwnAndTheDaemonLevelAppliesToTheRest() {
        let control = LogLevelControl(.info)
        var quiet = Logger(label: "quiet") { JournalLogHandler(label: $0, control: control, toJournal: false) }
        let other = Logger(label: "other") { JournalLogHandler(label: $0, control: control, toJournal: false) }
        quiet.logLevel = .critical
        #expect(quiet.logLevel == .critical)
        #expect(other.logLevel == .info)
        #expect(control.current == .info)
        // SIGHUP's new level reaches every logger that did not set its own.
        control.current = .debug
        #expect(other.logLevel == .debug)
        #expect(quiet.logLevel == .critical)
    }
}
