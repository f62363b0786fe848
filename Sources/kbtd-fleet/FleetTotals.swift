import Foundation
import KeyboardTelemetryClient

/// What the whole fleet did, summed over its devices.
struct FleetTotals: Sendable {
    var devices = 0
    var pads = 0
    /// Phones running Display Zoom.
    var zoomed = 0
    var hardwareKeyboards = 0
    var predictiveOff = 0
    var accessoryViews = 0
    var preWarming = 0
    var skewedClocks = 0
    var clocksOutsideWindow = 0
    var sessions = 0
    var noBarQuirks = 0
    var badSamples = 0
    var models = Set<String>()
    var languages = Set<String>()
    var undeliveredDevices = 0
    /// First-show estimates asked before the first show: how many were within 1 pt of what the keyboard then reported.
    var estimatesAsked = 0
    var estimatesFromKbtdRight = 0
    var defaultWouldBeRight = 0
    var client = TelemetryCounters()

    mutating func add(_ device: FleetDevice, simulator: SessionSimulator, estimate: KeyboardHeightEstimate?,
                      counters: TelemetryCounters, delivered: Bool) {
        devices += 1
        if device.isPad { pads += 1 }
        if device.zoom != nil { zoomed += 1 }
        if device.hardwareKeyboard { hardwareKeyboards += 1 }
        if !device.predictiveBar { predictiveOff += 1 }
        if device.accessoryHeight > 0 { accessoryViews += 1 }
        if device.preWarms { preWarming += 1 }
        if abs(device.clockSkew) > 60 { skewedClocks += 1 }
        if device.clockSkew > 86_400 || device.clockSkew < -30 * 86_400 { clocksOutsideWindow += 1 }
        sessions += device.sessions
        noBarQuirks += simulator.noBarQuirks
        badSamples += simulator.badSamples
        models.insert(device.model)
        languages.formUnion(device.languages)
        if device.usesEmoji { languages.insert("emoji") }
        if !delivered { undeliveredDevices += 1 }
        if let estimate, let truth = simulator.firstShow {
            estimatesAsked += 1
            if abs(estimate.height - truth.height) <= 1 { estimatesFromKbtdRight += 1 }
            let fallback: Double = truth.orientation == .portrait ? 335 : 209
            if abs(fallback - truth.height) <= 1 { defaultWouldBeRight += 1 }
        }
        let c = counters
        client.samplesRecorded += c.samplesRecorded
        client.samplesDiscarded += c.samplesDiscarded
        client.batchesQueued += c.batchesQueued
        client.batchesAcknowledged += c.batchesAcknowledged
        client.samplesAccepted += c.samplesAccepted
        client.samplesRejected += c.samplesRejected
        client.batchesDuplicate += c.batchesDuplicate
        client.batchesDropped += c.batchesDropped
        client.samplesDropped += c.samplesDropped
        client.batchesEvicted += c.batchesEvicted
        client.failedAttempts += c.failedAttempts
        client.retryAfterWaits += c.retryAfterWaits
        client.heightsFetched += c.heightsFetched
        client.heightsNotModified += c.heightsNotModified
        client.heightsFailed += c.heightsFailed
    }

    /// The summary; its last line is exactly `acknowledged SAMPLES samples in BATCHES batches`.
    func summary(elapsed: TimeInterval) -> String {
        let c = client
        let rate = elapsed > 0 ? Double(c.batchesAcknowledged + c.batchesDuplicate) / elapsed : 0
        let undelivered = c.batchesQueued - c.batchesAcknowledged - c.batchesDuplicate - c.batchesDropped - c.batchesEvicted
        return """
        devices     \(devices): \(devices - pads) iPhones (\(zoomed) with Display Zoom), \(pads) iPads (\(hardwareKeyboards) with a hardware keyboard); \(models.count) models; \(languages.count) keyboards
        behaviour   predictive bar off on \(predictiveOff); accessory views in \(accessoryViews) apps; \(preWarming) apps pre-warm; \(skewedClocks) clocks skewed (\(clocksOutsideWindow) beyond kbtd's window)
        sessions    \(sessions) (\(noBarQuirks) first shows reported the no-bar height, then a change)
        recorded    \(c.samplesRecorded) samples (\(badSamples) deliberately broken)
        delivered   \(c.batchesAcknowledged) batches acknowledged (202), \(c.batchesDuplicate) duplicates (200), \(c.batchesDropped) refused (4xx), \(max(0, undelivered)) undelivered; \(c.failedAttempts) failed attempts, \(c.retryAfterWaits) Retry-After waits
        rejected    \(c.samplesRejected) samples rejected by kbtd (broken samples and skewed clocks)
        estimates   before the first show, kbtd's height was within 1 pt on \(estimatesFromKbtdRight) of \(estimatesAsked) devices (a hard-coded 335/209: \(defaultWouldBeRight))
        time        \(String(format: "%.1f", elapsed)) s, \(String(format: "%.0f", rate)) batches/s
        acknowledged \(c.samplesAccepted) samples in \(c.batchesAcknowledged) batches
        """
    }
}
