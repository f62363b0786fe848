import Foundation

/// Work handed from the caller's thread to the client's background pipeline, in order.
enum PipelineJob: Sendable {
    /// Read the heights cache an earlier run left (the first job after `init`).
    case loadHeights
    /// Persist a sealed batch (its id is fixed here, once) and deliver it.
    case seal(UUID, [KeyboardSample])
    /// Write the heights cache to disk.
    case saveHeights
    /// Resumed once every earlier job is done.
    case barrier(CheckedContinuation<Void, Never>)
}

/// The samples not yet sealed into a batch, and the first-show bookkeeping.
/// Lives behind a lock: `record` runs on the caller's thread.
struct SampleRecorder {
    var pending: [KeyboardSample] = []
    /// When the app asked for the keyboard before its first show (`keyboardRequested`).
    var requestedAt: Date?
    var requestedPreloaded = false
    /// The first show after launch has been recorded.
    var firstShowSeen = false

    /// Adds cold-start fields to the first show after launch when the app told us when it asked for the keyboard.
    mutating func annotateFirstShow(_ sample: inout KeyboardSample, now: Date) {
        guard sample.event == .show, !firstShowSeen else { return }
        firstShowSeen = true
        if sample.coldStartMs == nil, let requestedAt {
            let milliseconds = now.timeIntervalSince(requestedAt) * 1000
            // kbtd accepts 0 < cold_start_ms <= 60,000; outside that the measurement is meaningless.
            if milliseconds > 0 && milliseconds <= 60_000 {
                sample.coldStartMs = (milliseconds * 1000).rounded() / 1000
                sample.preloaded = sample.preloaded ?? requestedPreloaded
            }
        }
        if sample.coldStartMs != nil && sample.preloaded == nil { sample.preloaded = false }
    }

    /// Takes the pending samples as a new batch and hands it to the pipeline. Call under the lock,
    /// so batches reach the pipeline in the order they were sealed.
    mutating func seal(into jobs: AsyncStream<PipelineJob>.Continuation) {
        guard !pending.isEmpty else { return }
        jobs.yield(.seal(.batchID(sealedAt: Date()), pending))
        pending = []
    }
}
