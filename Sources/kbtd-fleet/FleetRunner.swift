import Foundation
import KeyboardTelemetryClient
import Synchronization

/// Runs the fleet: up to `concurrency` devices at a time, each a real
/// `KeyboardTelemetryClient` with its own scratch queue, sharing one transport.
final class FleetRunner: Sendable {
    let plan: FleetPlan
    let deviceCount: Int
    let baseURL: URL
    let concurrency: Int
    let transport: any TelemetryTransport
    let scratch: URL
    let deadline: Date
    let now: Date
    /// Totals of the devices finished so far, for the progress line.
    let progress = Mutex(FleetProgress())

    init(plan: FleetPlan, deviceCount: Int, baseURL: URL, concurrency: Int, transport: any TelemetryTransport,
         scratch: URL, deadline: Date, now: Date) {
        self.plan = plan
        self.deviceCount = deviceCount
        self.baseURL = baseURL
        self.concurrency = concurrency
        self.transport = transport
        self.scratch = scratch
        self.deadline = deadline
        self.now = now
    }

    struct FleetProgress: Sendable {
        var devicesDone = 0
        var batches = 0
        var samples = 0
    }

    func run() async -> FleetTotals {
        var totals = FleetTotals()
        await withTaskGroup(of: DeviceOutcome.self) { group in
            var next = 0
            func launch() {
                guard next < deviceCount else { return }
                let index = next
                next += 1
                group.addTask { await self.simulate(self.plan.device(index)) }
            }
            for _ in 0..<min(concurrency, deviceCount) { launch() }
            for await outcome in group {
                totals.add(outcome.device, simulator: outcome.simulator, estimate: outcome.estimate,
                           counters: outcome.counters, delivered: outcome.delivered)
                progress.withLock { progress in
                    progress.devicesDone += 1
                    progress.batches += outcome.counters.batchesAcknowledged
                    progress.samples += outcome.counters.samplesAccepted
                }
                launch()
            }
        }
        return totals
    }

    struct DeviceOutcome: Sendable {
        var device: FleetDevice
        var simulator: SessionSimulator
        var estimate: KeyboardHeightEstimate?
        var counters: TelemetryCounters
        var delivered: Bool
    }

    /// One device's life: launch (fetch heights, ask for an estimate before the first show), its sessions
    /// (each flushed when the app goes to the background), and waiting until its queue is delivered.
    private func simulate(_ device: FleetDevice) async -> DeviceOutcome {
        var simulator = SessionSimulator(device: device, seed: plan.seed, now: now)
        var configuration = TelemetryConfiguration(baseURL: baseURL,
                                                   storageDirectory: scratch.appendingPathComponent("device-\(device.index)"))
        configuration.synchronousWrites = false  // a scratch queue: losing it on a crash is fine
        configuration.backoffBase = 0.25
        configuration.backoffMax = 5
        // Skewed clocks beyond kbtd's window are part of the simulation: kbtd, not the client, judges them.
        configuration.maxSampleAge = .infinity
        configuration.logger = TelemetryLogger(minimumLevel: .error) { level, message in
            FileHandle.standardError.write(Data("kbtd-fleet: device \(device.index) \(device.model): \(message)\n".utf8))
        }
        let client = KeyboardTelemetryClient(device: device.telemetryDevice, configuration: configuration, transport: transport)
        client.start()
        var estimate: KeyboardHeightEstimate?
        for number in 0..<device.sessions {
            let samples = simulator.session(number)
            if number == 0, let first = simulator.firstShow {
                // What the app lays out for before the keyboard ever appeared on this device.
                await client.refreshHeights()
                estimate = client.heightEstimate(language: first.language, orientation: first.orientation,
                                                 keyboardType: first.keyboardType)
            }
            for sample in samples { client.record(sample) }
            await client.flush()
        }
        let delivered = await client.waitForDelivery(timeout: max(0, deadline.timeIntervalSinceNow))
        await client.shutdown()
        try? FileManager.default.removeItem(at: configuration.storageDirectory)
        return DeviceOutcome(device: device, simulator: simulator, estimate: estimate, counters: client.counters,
                             delivered: delivered)
    }
}
