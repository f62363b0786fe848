import NIOCore

/// How many HTTP/2 WINDOW_UPDATE frames one connection may send, bounded as swift-nio-http2 bounds PING,
/// SETTINGS and PRIORITY frames (it does not count these): each costs a flow-control update and a pass
/// through the frame handlers, and a client may send them without end (`+1` at a time) while nothing is
/// sent to it. An honest client opens a window because it read DATA: at most one WINDOW_UPDATE for the
/// stream and one for the connection per DATA frame written to it. So in any `period` (30 s) a
/// connection may send `allowance` (200) plus two per DATA frame written to it in that period; past it,
/// `HTTP2FrameFront` ends the connection with GOAWAY `ENHANCE_YOUR_CALM`, as swift-nio-http2 ends a PING flood.
///
///     var allowance = WindowUpdateAllowance()
///     if !allowance.admitUpdate(now: loop.now) { /* GOAWAY ENHANCE_YOUR_CALM, close */ }
struct WindowUpdateAllowance {
    static let defaultAllowance = 200
    static let period = TimeAmount.seconds(30)

    let allowance: Int
    private var updates = 0
    private var dataFrames = 0
    private var countedSince: NIODeadline?

    init(allowance: Int = WindowUpdateAllowance.defaultAllowance) {
        self.allowance = allowance
    }

    /// Counts a WINDOW_UPDATE received; false once past the allowance.
    mutating func admitUpdate(now: NIODeadline) -> Bool {
        roll(now)
        updates += 1
        return updates <= allowance + 2 * dataFrames
    }

    /// Counts a DATA frame written to the connection.
    mutating func countData(now: NIODeadline) {
        roll(now)
        dataFrames += 1
    }

    /// Starts a new period of counts once the current one has passed.
    private mutating func roll(_ now: NIODeadline) {
        if let since = countedSince, now - since < Self.period { return }
        countedSince = now
        updates = 0
        dataFrames = 0
    }
}
