import ArgumentParser
import Dispatch
import Foundation
import KBTDCompression
import KBTDCore
import KBTDReference
import KBTDStore
import Synchronization

/// `kbtd-bench`: reproducible measurements of kbtd (see Benchmarks/run and BENCHMARKS.md).
@main
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kbtd-bench",
        abstract: "Load generator and in-process references for kbtd's benchmarks.",
        subcommands: [Decode.self, Ingest.self, IngestOver.self, Keys.self, IndexMemory.self, Dashboard.self, Bodies.self, Commit.self, Session.self])
}

/// The in-process reference: only inflating, decoding and validating (and
/// reducing to counts) the same gzip batches on one core, through the
/// daemon's counting `BatchIntake.count` (with `--materialize`, `BatchIntake.validate`
/// and the grouped reduction it replaced; with `--reference`, the
/// tree parser, validator and sample-by-sample reduction before them; with `--inflater zlib`, zlib's
/// `StreamingInflater` instead of the daemon's `BodyInflater`). `--stage` stops early, for stage profiles
/// (instructions of a stage = a run to it minus a run to the one before). Past `reduce`, the daemon's
/// work outside SQLite after the intake, on the counting path: `pending` (`PendingBatch` with its
/// release and day counts, as `IngestRoute` queues it), `settle` (`CommitPlan` and `settle` per group
/// of `--group` batches, every id new, as the writer's commit) and `index` (`indexDelta` and
/// `HeightIndex.apply`, every key admitted, as the writer applies a commit to the live index).
struct Decode: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "In-process inflate + decode + validate, one core.")
    enum Stage: String, ExpressibleByArgument, Comparable {
        case generate, inflate, validate, reduce, pending, settle, index
        private var order: Int { [.generate, .inflate, .validate, .reduce, .pending, .settle, .index].firstIndex(of: self)! }
        static func < (a: Stage, b: Stage) -> Bool { a.order < b.order }
    }

    @Option var batches = 2_000
    @Option var seed: UInt64 = 1
    @Flag(help: "Decode with the reference tree parser + BatchValidator instead of BatchIntake.") var reference = false
    @Flag(help: "Decode with BatchIntake.validate (a Sample per sample) and AggregateDelta(batch:), as before the counting intake.")
    var materialize = false
    @Option(help: "Last stage to run: generate, inflate, validate, reduce (the default), pending, settle or index.")
    var stage: Stage = .reduce
    @Option(help: "Batches per group commit in the settle and index stages.") var group = 32
    enum InflatePath: String, ExpressibleByArgument { case daemon, zlib }
    @Option(help: "daemon: BodyInflater (libdeflate for a whole gzip member, as kbtd serve); zlib: StreamingInflater alone.")
    var inflater: InflatePath = .daemon

    func validate() throws {
        guard stage <= .reduce || (!reference && !materialize) else {
            throw ValidationError("--stage \(stage.rawValue) follows the counting intake only (no --reference, --materialize)")
        }
    }

    func run() throws {
        var workload = Workload(seed: seed)
        let now = Date().timeIntervalSince1970
        let bodies = (0..<batches).map { _ in Workload.gzip(workload.batchJSON(now: now)) }
        let rules = FieldRules()
        let validator = BatchValidator(rules: rules)
        var samples = 0
        var queued: [PendingBatch] = []
        var index = HeightIndex()
        // The writer's work per group commit outside SQLite (stages settle and index).
        func commitQueued() {
            guard stage >= .settle, !queued.isEmpty else { return }
            var plan = CommitPlan(queued)
            plan.settle(claimed: Set(plan.claims.map(\.batchID)))
            queued.removeAll(keepingCapacity: true)
            guard stage >= .index else { return }
            index.apply(plan.indexDelta(passing: plan.added.seriesKeys, newReleaseSources: plan.added.releaseSources,
                                        newScreenSources: plan.added.screenSources))
        }
        let cpuStart = processCPUSeconds()
        let start = ContinuousClock.now
        for body in bodies where stage != .generate {
            let json: [UInt8]
            switch inflater {
            case .daemon:
                json = try BodyInflater.inflate(body, coding: .gzip, maxOutput: 8 << 20)
            case .zlib:
                let inflater = StreamingInflater(coding: .gzip, maxOutput: 8 << 20)
                try inflater.feed(body)
                json = try inflater.finish()
            }
            guard stage != .inflate else {
                samples += json.count
                continue
            }
            if !reference && !materialize {
                // What the daemon runs: one pass that counts (validate and reduce are one stage here).
                let counted = try BatchIntake.count(json: json, now: now, rules: rules)
                guard stage != .validate else {
                    samples += counted.accepted
                    continue
                }
                guard stage > .reduce else {
                    let delta = counted.delta()
                    samples += delta.animations.values.reduce(0) { $0 + Int($1) }
                    continue
                }
                var pending = PendingBatch(counted, receivedAt: Int64(now))
                pending.delta.recordRelease(os: counted.device.os)
                pending.delta.recordScreen(counted.device.screen)
                pending.delta.recordDay(receivedAt: pending.receivedAt)
                samples += pending.accepted
                queued.append(pending)
                if queued.count == group { commitQueued() }
                continue
            }
            let batch = reference
                ? try validator.validate(json: json, now: now) : try BatchIntake.validate(json: json, now: now, rules: rules)
            guard stage != .validate else {
                samples += batch.samples.count
                continue
            }
            let delta = reference ? AggregateDelta.sampleBySample(batch) : AggregateDelta(batch: batch)
            samples += delta.animations.values.reduce(0) { $0 + Int($1) }
        }
        commitQueued()
        let seconds = (ContinuousClock.now - start) / .seconds(1)
        // CPU time too: on a loaded machine the wall clock also counts the time spent waiting for a core.
        let cpuSeconds = processCPUSeconds() - cpuStart
        let label = (reference ? " (reference)" : materialize ? " (materialised samples)" : "") + (inflater == .zlib ? " (zlib)" : "")
            + (stage > .reduce ? " (to stage \(stage.rawValue))" : "")
        switch stage {
        case .generate:
            print("decode (generate only): \(batches) batches")
            return
        case .inflate:
            // Every workload batch holds 100 samples: the rate the inflated bytes carry them at.
            print(String(format: "inflate alone: %d batches, %d bytes in %.3f s: %.0f samples/s (one core)",
                         batches, samples, seconds, Double(batches * 100) / seconds))
            return
        case .validate:
            print("decode to validate\(label): " + String(format: "%d batches, %d samples in %.3f s: %.0f samples/s (one core)",
                                                            batches, samples, seconds, Double(samples) / seconds))
            return
        case .reduce, .pending, .settle, .index: break
        }
        print("decode\(label): " + String(format: "%d batches, %d samples in %.3f s: %.0f samples/s (one core); %.3f CPU s: %.0f samples per CPU second",
                                            batches, samples, seconds, Double(samples) / seconds, cpuSeconds, Double(samples) / cpuSeconds))
    }
}

/// Drives `POST /v1/batches` over keep-alive connections with distinct batches.
struct Ingest: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "End-to-end ingest: 202s after commit, samples/s and ack latency.")
    @Option var port: Int
    @Option var connections = 16
    @Option(help: "Batches to pre-generate (each 100 samples); the run stops when they are used up.") var batches = 20_000
    @Option(help: "Seconds to run at most.") var seconds = 10.0
    @Option(help: "Batches per second in all (0: as fast as possible).") var rate = 0.0
    @Option(help: "The daemon's pid, to report its CPU use.") var pid: Int32?
    @Option var seed: UInt64 = 2

    func run() throws {
        var workload = Workload(seed: seed)
        let now = Date().timeIntervalSince1970
        let requests = (0..<batches).map { _ in Workload.request(gzipBody: Workload.gzip(workload.batchJSON(now: now))) }
        let next = Atomic<Int>(0)
        let latencies = Mutex<[Double]>([])
        let statuses = Mutex<[Int: Int]>([:])
        let failures = Atomic<Int>(0)
        let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
        let interval = rate > 0 ? Double(connections) / rate : 0
        let cpuBefore = processCPUSeconds()
        let daemonBefore = pid.flatMap(processCPUSeconds(pid:))
        let start = ContinuousClock.now
        let (port, connections) = (self.port, self.connections)
        // One OS thread per connection: concurrentPerform would run only as many
        // workers as there are cores (2 here), whatever `--connections` says.
        runOnThreads(connections) { worker in
            guard let connection = try? BenchConnection(host: "127.0.0.1", port: port) else {
                failures.add(1, ordering: .relaxed)
                return
            }
            var mine: [Double] = []
            var counts: [Int: Int] = [:]
            var scheduled = ContinuousClock.now + .seconds(Double(worker) * interval / Double(connections))
            while ContinuousClock.now < deadline {
                let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
                guard index < requests.count else { break }
                if interval > 0 {
                    if scheduled > ContinuousClock.now { Thread.sleep(forTimeInterval: (scheduled - ContinuousClock.now) / .seconds(1)) }
                    scheduled = scheduled + .seconds(interval)  // not rounded to whole milliseconds, which sent faster than --rate
                }
                let sent = ContinuousClock.now
                guard let status = try? connection.roundTrip(requests[index]) else {
                    failures.add(1, ordering: .relaxed)
                    break
                }
                mine.append((ContinuousClock.now - sent) / .milliseconds(1))
                counts[status, default: 0] += 1
            }
            latencies.withLock { $0.append(contentsOf: mine) }
            statuses.withLock { all in for (status, count) in counts { all[status, default: 0] += count } }
        }
        let elapsed = (ContinuousClock.now - start) / .seconds(1)
        let sorted = latencies.withLock { $0 }.sorted()
        let accepted = statuses.withLock { $0[202] ?? 0 }
        let generatorCPU = processCPUSeconds() - cpuBefore
        var daemonCPU: Double?
        if let before = daemonBefore, let after = pid.flatMap(processCPUSeconds(pid:)) { daemonCPU = after - before }
        print(String(format: "ingest: %d connections, %.1f s, %d batches acknowledged (202) = %.0f batches/s, %.0f samples/s",
                     connections, elapsed, accepted, Double(accepted) / elapsed, Double(accepted * 100) / elapsed))
        print(String(format: "ingest: ack latency p50 %.2f ms, p99 %.2f ms, max %.2f ms; statuses %@; connection failures %d",
                     percentile(sorted, 0.5), percentile(sorted, 0.99), sorted.last ?? .nan,
                     statuses.withLock { $0 }.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " "),
                     failures.load(ordering: .relaxed)))
        print(String(format: "ingest: generator CPU %.2f s (%.0f%% of one core)%@", generatorCPU, 100 * generatorCPU / elapsed,
                     daemonCPU.map { String(format: ", daemon CPU %.2f s (%.0f%% of one core)", $0, 100 * $0 / elapsed) } ?? ""))
    }
}

/// Runs `body(0..<count)` on `count` dedicated threads and waits for all.
func runOnThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let done = DispatchGroup()
    for worker in 0..<count {
        done.enter()
        let thread = Thread {
            body(worker)
            done.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    done.wait()
}

/// Fills the daemon with distinct keys, then reports its RSS and the latency
/// of `GET /v1/height` for keys picked at random.
struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "RSS and height-query latency after N distinct keys.")
    @Option var port: Int
    @Option var count = 100_000
    @Option var pid: Int32
    @Option var queries = 2_000
    /// OS releases each key is reported on (26.1, 26.2, ...): every (key, release) is an entry of
    /// the index's release dimension, so the memory measured includes it.
    @Option var releases = 2
    /// Every device reports its screen (`390x844`), so every key holds a screen entry; one model in
    /// `zoomedEvery` also has Display Zoom phones (`320x693`, 17 pt lower), so its keys hold a second
    /// one: the screen dimension's memory is in the figure (0: no zoomed phones).
    @Option var zoomedEvery = 10
    /// Devices send no `device.screen` (and questions no `screen=`): the index without its screen dimension.
    @Flag var noScreens = false

    func run() throws {
        var workload = Workload(seed: 3)
        let now = Date().timeIntervalSince1970
        let connection = try BenchConnection(host: "127.0.0.1", port: port)
        // One batch is one device (model, OS); each of its samples names another
        // language, so every sample opens a key: 100 keys per model, as a real
        // model has tens to hundreds of (language, orientation, type) keys.
        let perBatch = 100
        let batchCount = (count + perBatch - 1) / perBatch
        func zoomed(_ batch: Int) -> Bool { zoomedEvery > 0 && batch % zoomedEvery == 0 }
        for step in 0..<batchCount * max(1, releases) {
            let release = step / batchCount + 1
            let batch = step % batchCount
            let keys = min(perBatch, count - batch * perBatch)
            for (screen, height) in [("390x844", 336.0)] + (zoomed(batch) ? [("320x693", 319.0)] : []) {
                let samples: [JSONOutput] = (0..<keys).map { i in
                    .object([("t", .double(now)), ("event", .string("show")), ("language", .string("l\(i)")),
                             ("orientation", .string("portrait")), ("height", .double(height)),
                             ("duration", .double(0.25)), ("curve", .int(7))])
                }
                let document = JSONOutput.object([
                    ("batch_id", .string(workload.uuid())),
                    ("device", .object([("model", .string("Bench\(batch)")), ("os", .string("26.\(release)"))]
                                       + (noScreens ? [] : [("screen", .string(screen))]))),
                    ("samples", .array(samples)),
                ])
                let status = try connection.roundTrip(Workload.request(gzipBody: Workload.gzip(Array(document.serialized().utf8))))
                guard status == 202 else { throw BenchError("filling keys: status \(status)") }
            }
        }
        Thread.sleep(forTimeInterval: 0.5)
        let rss = residentMiB(pid: pid) ?? .nan
        var times: [Double] = []
        for _ in 0..<queries {
            let batch = Int(workload.next() % UInt64(batchCount))
            let language = "l\(Int(workload.next() % UInt64(min(perBatch, count))))"
            let screen = zoomed(batch) && workload.next() % 2 == 0 ? "320x693" : "390x844"
            let asked = noScreens ? "" : "&screen=\(screen)"
            let request = Array("GET /v1/height?model=Bench\(batch)&language=\(language)&os=26.1\(asked) HTTP/1.1\r\nHost: bench\r\n\r\n".utf8)
            let start = ContinuousClock.now
            _ = try connection.roundTrip(request)
            times.append((ContinuousClock.now - start) / .microseconds(1))
        }
        times.sort()
        print(String(format: "keys: %d distinct keys on %d releases, zoomed phones on one model in %d, daemon RSS %.1f MiB, GET /v1/height p50 %.0f µs, p99 %.0f µs (%d queries, one connection)",
                     count, max(1, releases), zoomedEvery, rss, percentile(times, 0.5), percentile(times, 0.99), queries))
    }
}
