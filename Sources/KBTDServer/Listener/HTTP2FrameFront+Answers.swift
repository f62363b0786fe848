import NIOHTTP2
import Synchronization

extension HTTP2FrameFront {
    /// The answers finished off the event loop for one connection, waiting to be sent from it. A group
    /// commit resumes its batches' tasks together; each task posts its answer here, and only the first
    /// since the last delivery asks the event loop to deliver (one task on the loop, one flush), so the
    /// answers of a commit that reach it in a burst are sent together: one TLS record and one `write` for
    /// all of them, where each answer's own promise cost its own hop to the loop, flush, record and
    /// `write`. Any thread may post (whichever resumes the commit's continuation).
    final class Answers: Sendable {
        private let state = Mutex<(finished: [(stream: HTTP2StreamID, answer: JSONAnswer)], delivering: Bool)>(([], false))

        /// Adds a finished answer; true when the caller must ask the event loop to deliver (no delivery
        /// was pending), false when a delivery already asked for will send it.
        func post(_ answer: JSONAnswer, on stream: HTTP2StreamID) -> Bool {
            state.withLock { state in
                state.finished.append((stream, answer))
                if state.delivering { return false }
                state.delivering = true
                return true
            }
        }

        /// The answers posted and not taken yet.
        var count: Int { state.withLock { $0.finished.count } }

        /// The answers posted so far (on the event loop, delivering them): a later post asks again.
        func take() -> [(stream: HTTP2StreamID, answer: JSONAnswer)] {
            state.withLock { state in
                state.delivering = false
                let finished = state.finished
                state.finished = []
                return finished
            }
        }
    }
}
