import Foundation
import KBTDCore
import Testing

/// The built `kbtd-fleet` binary against the live daemon.
@Suite("kbtd-fleet against the live daemon", .ownThreads, .timeLimit(.minutes(10)))
struct FleetRunTests {
    /// `kbtd-fleet` is built beside `kbtd`.
    static let binary = URL(fileURLWithPath: TestPaths.kbtdBinary).deletingLastPathComponent().appendingPathComponent("kbtd-fleet").path

    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
        var lastLine: String { stdout.split(separator: "\n").last.map(String.init) ?? "" }

        /// SAMPLES and BATCHES from `acknowledged SAMPLES samples in BATCHES batches`.
        var acknowledged: (samples: Int, batches: Int)? {
            let words = lastLine.split(separator: " ")
            guard words.count == 6, words[0] == "acknowledged", words[2] == "samples", words[3] == "in", words[5] == "batches",
                  let samples = Int(words[1]), let batches = Int(words[4]) else { return nil }
            return (samples, batches)
        }
    }

    /// Runs `kbtd-fleet` on a thread of its own: waiting for a subprocess must not hold one of the
    /// cooperative threads the clients of other tests need.
    static func fleet(_ arguments: [String]) async throws -> Run {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                let process = Process()
                process.executableURL = URL(fileURLWithPath: binary)
                process.arguments = arguments
                let out = Pipe(), err = Pipe()
                process.standardOutput = out
                process.standardError = err
                do {
                    try process.run()
                } catch {
                    continuation.resume(throwing: error)
                    return
                }
                // stderr is small; read stdout to its end first, then stderr.
                let stdout = out.fileHandleForReading.readDataToEndOfFile()
                let stderr = err.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                continuation.resume(returning: Run(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                                                   stderr: String(decoding: stderr, as: UTF8.self)))
            }
            thread.start()
        }
    }

    static func run(against daemon: TestDaemon, devices: Int, seed: Int) async throws -> Run {
        try await fleet(["--url", "http://127.0.0.1:\(daemon.port)", "--devices", "\(devices)", "--seed", "\(seed)",
                   "--data", TestPaths.fixtures.path])
    }

    /// `kbtd_batches_total{outcome="stored"}` from `/metrics`: the batches kbtd answered 202 for.
    static func storedBatches(_ daemon: TestDaemon) throws -> Int? {
        let metrics = try daemon.get("/metrics").text
        let line = metrics.split(separator: "\n").first { $0.hasPrefix("kbtd_batches_total{outcome=\"stored\"}") }
        return line?.split(separator: " ").last.flatMap { Double($0) }.map { Int($0) }
    }

    @Test func acknowledgedTotalsEqualWhatKbtdStored() async throws {
        let daemon = try TestDaemon().start()
        let run = try await Self.run(against: daemon, devices: 40, seed: 42)
        #expect(run.status == 0, "\(run.stderr)")
        let acknowledged = try #require(run.acknowledged, "last line: \(run.lastLine)")
        #expect(!run.stdout.contains("\r"), "no progress line when stdout is not a terminal")

        let stats = try daemon.stats()
        #expect(stats["samples"] == .number(Double(acknowledged.samples)))
        #expect(try Self.storedBatches(daemon) == acknowledged.batches)
        #expect(acknowledged.batches >= 40 && acknowledged.samples > 20 * acknowledged.batches / 2)

        // A believable fleet: phones and iPads, CJK and emoji keyboards, both orientations,
        // cold and pre-warmed first shows, the no-bar first show under a with-bar mode.
        let rows = try #require(stats["stats"]?.array)
        let models = Set(rows.compactMap { $0["model"]?.string })
        let languages = Set(rows.compactMap { $0["language"]?.string })
        #expect(models.contains { $0.hasPrefix("iPad") } && models.filter { $0.hasPrefix("iPhone") }.count >= 10)
        #expect(languages.contains("emoji") && !languages.isDisjoint(with: ["ja-JP", "zh-Hans", "zh-Hant", "ko-KR"]))
        #expect(rows.contains { $0["orientation"] == .string("landscape") })
        #expect(rows.contains { ($0["cold_start_samples"]?.double ?? 0) > 0 } && rows.contains { ($0["preloaded_samples"]?.double ?? 0) > 0 })
        #expect(rows.contains { row in
            guard let mode = row["height_mode"]?.double, let p10 = row["height_p10"]?.double else { return false }
            return p10 < mode
        })
    }

    @Test func theSameSeedSimulatesTheSameFleet() async throws {
        let first = try TestDaemon().start(), second = try TestDaemon().start(), third = try TestDaemon().start()
        let a = try await Self.run(against: first, devices: 15, seed: 7)
        let b = try await Self.run(against: second, devices: 15, seed: 7)
        let c = try await Self.run(against: third, devices: 15, seed: 8)
        #expect(a.status == 0 && b.status == 0 && c.status == 0, "\(a.stderr)\(b.stderr)\(c.stderr)")
        #expect(a.lastLine == b.lastLine && a.acknowledged != nil)
        // Batch ids are fresh per batch, so the second fleet was stored, not answered as duplicates.
        #expect(b.stdout.contains(" 0 duplicates (200)"))
        let statsA = try first.stats(), statsB = try second.stats(), statsC = try third.stats()
        #expect(statsA["stats"] == statsB["stats"], "same seed, same aggregates")
        #expect(statsA["stats"] != statsC["stats"], "another seed, another fleet")
    }

    @Test func badUsageAndAnUnreachableDaemonFailClearly() async throws {
        let usage = try await Self.fleet(["--devices", "0"])
        #expect(usage.status == 64 && usage.stderr.contains("--devices"))
        let unreachable = try await Self.fleet(["--url", "http://127.0.0.1:\(unreachablePort())", "--devices", "1", "--data", TestPaths.fixtures.path])
        #expect(unreachable.status == 69 && unreachable.stderr.contains("cannot reach kbtd"))
        let noData = try await Self.fleet(["--data", "/nonexistent", "--devices", "1"])
        #expect(noData.status != 0 && noData.stderr.contains("--data /nonexistent"))
    }
}
