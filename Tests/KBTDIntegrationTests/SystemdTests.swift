import Foundation
import KBTDCore
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("systemd integration", .ownThreads, .timeLimit(.minutes(10)))
struct SystemdTests {
    @Test(arguments: [false, true])
    func notifyReadyWatchdogStopping(abstract: Bool) throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let listener = try NotifyListener(directory: directory, abstract: abstract)
        let daemon = TestDaemon(environment: ["NOTIFY_SOCKET": listener.name, "WATCHDOG_USEC": "400000"])
        try daemon.start()

        let first = try #require(listener.receive(seconds: 60))
        #expect(first.hasPrefix("READY=1"), "\(first)")
        #expect(first.contains("STATUS=serving"))
        // READY=1 means the port accepts now.
        #expect(try daemon.get("/healthz").status == 200)

        // WATCHDOG=1 keeps coming (every 0.2 s: counted, not timed).
        var pings = 0
        let window = listener.messages(until: { message in
            if message.contains("WATCHDOG=1") { pings += 1 }
            return pings == 4
        }, seconds: 60)
        #expect(pings == 4, "WATCHDOG=1 expected to repeat, got \(window)")

        daemon.signal(SIGTERM)
        var stopping = false
        while let message = listener.receive(seconds: 60) {
            if message.contains("STOPPING=1") { stopping = true; break }
        }
        #expect(stopping)
        #expect(daemon.waitForExit() == 0)
    }

    /// The ping loop sleeps WatchdogSec/2 between pings; SIGTERM must not wait for that sleep
    /// (under systemd's 30 s watchdog every stop took up to 15 s). With a one-hour watchdog the
    /// next ping is 30 minutes away: a stop that waited for it would be reported hung.
    @Test func stopDoesNotWaitForTheNextWatchdogPing() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let listener = try NotifyListener(directory: directory)
        let daemon = TestDaemon(environment: ["NOTIFY_SOCKET": listener.name, "WATCHDOG_USEC": "3600000000"])
        try daemon.start()
        #expect(listener.receive(seconds: 60)?.hasPrefix("READY=1") == true)
        daemon.signal(SIGTERM)
        #expect(daemon.waitForExit() == 0, "SIGTERM did not stop kbtd: the stop waited for the 30 min ping interval")
    }

    /// From SIGTERM on, `/readyz` says 503 `shutting down` while the daemon still serves everything
    /// else for `shutdown_delay_seconds` (a load balancer stops sending before connections drain),
    /// including a client that held its connection from before; then it stops as usual.
    @Test func readinessTurns503AtSigtermWhileConnectionsAreStillServed() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("kbtd.conf").path
        // Long enough that the checks below run inside it on a loaded machine; the test then waits it out.
        try "shutdown_delay_seconds = 15\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try TestDaemon(extraArguments: ["--config", config]).start()
        let held = try daemon.connection()
        #expect(try held.request("GET", "/readyz").json?["status"] == .string("ready"))

        daemon.signal(SIGTERM)
        var answer: HTTPTestResponse?
        try daemon.until("/readyz to answer 503 after SIGTERM") {
            answer = try held.request("GET", "/readyz")
            return answer?.status == 503
        }
        #expect(answer?.json?["error"] == .string("shutting down"), "\(answer?.text ?? "")")
        #expect(answer?.header("retry-after") != nil)
        // Alive, and still serving: liveness, a height, a batch, on the held connection and on new ones.
        #expect(try held.request("GET", "/healthz").status == 200)
        #expect(try daemon.post(gzip(batchBody(samples: shows(3, height: 336))), encoding: "gzip").status == 202)
        #expect(try daemon.get("/v1/height?model=iPhone17,1&language=en-US").status == 200)
        #expect(daemon.process?.isRunning == true)
        #expect(daemon.waitForExit() == 0)
        #expect(try daemon.stats()["samples"] == .number(3), "the batch acknowledged during the delay is stored")
    }

    /// A kept-alive HTTP/1.1 connection whose requests were all answered before the router (cached
    /// heights, which Hummingbird's connection handler never sees) does not hold up a graceful stop:
    /// SIGTERM closes it as idle, and the daemon exits 0 at once, not after the idle deadline.
    @Test func aConnectionServedOnlyCachedHeightsIsClosedAtSigterm() throws {
        let daemon = try TestDaemon(environment: ["KBTD_IDLE_TIMEOUT_SECONDS": "600"]).start()
        let held = try daemon.connection()
        for _ in 0..<3 {
            #expect(try held.request("GET", "/v1/height?model=iPhone17,1&language=en-US").status == 200)
        }
        #expect(try daemon.metric("kbtd_fast_answers_total{protocol=\"http/1.1\"}") ?? 0 >= 2,
                "the held connection's answers came from the fast path")
        daemon.signal(SIGTERM)
        #expect(held.isClosedByPeer(within: 60), "the held connection was left open")
        #expect(daemon.waitForExit() == 0)
    }

    @Test func watchdogIsWithheldWhileTheWriterIsStuck() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let listener = try NotifyListener(directory: directory)
        let daemon = TestDaemon(environment: ["NOTIFY_SOCKET": listener.name, "WATCHDOG_USEC": "400000"])
        try daemon.start()
        #expect(listener.receive(seconds: 60)?.hasPrefix("READY=1") == true)

        // Another process holds SQLite's write lock until the test lets go: the
        // writer's next commit blocks inside SQLite, as it would on a stuck disk.
        let locker = Process()
        locker.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        locker.arguments = ["python3", "-c", """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1], isolation_level=None)
            c.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); sys.stdin.readline(); c.execute('COMMIT')
            """, daemon.database]
        let lockerOut = Pipe(), lockerIn = Pipe()
        locker.standardOutput = lockerOut
        locker.standardInput = lockerIn
        try locker.run()
        _ = lockerOut.fileHandleForReading.availableData  // "locked"
        let posted = ConcurrentResults<Int>()
        let postDone = DispatchSemaphore(value: 0)
        let poster = Thread {
            posted.append((try? daemon.post(gzip(batchBody(samples: shows(1, height: 336))), encoding: "gzip").status) ?? -1)
            postDone.signal()
        }
        poster.start()

        // A round whose probe fails sends STATUS=stalled instead of WATCHDOG=1: the ping is withheld.
        let untilStall = listener.messages(until: { $0.contains("STATUS=stalled: the writer thread") }, seconds: 60)
        #expect(untilStall.last?.contains("STATUS=stalled: the writer thread") == true, "no stall reported: \(untilStall)")
        #expect(untilStall.last?.contains("WATCHDOG=1") == false)
        // Where it stuck reaches the journal (and `systemctl status`) before systemd's SIGABRT.
        #expect(daemon.waitForLog("health probe failed, withholding WATCHDOG=1: the writer thread has not gone round", seconds: 60),
                "\(daemon.log_())")

        // Once the lock is gone the commit lands and the pings resume.
        lockerIn.fileHandleForWriting.write(Data("\n".utf8))
        try? lockerIn.fileHandleForWriting.close()
        locker.waitUntilExit()
        var pings = 0
        let resumed = listener.messages(until: { message in
            if message.contains("WATCHDOG=1") { pings += 1 }
            return pings == 3
        }, seconds: 60)
        #expect(pings == 3, "pings did not resume after the lock was released: \(resumed)")
        #expect(postDone.wait(timeout: .now() + 60) == .success, "the batch posted during the stall was never answered")
        #expect(posted.values == [202])
    }

    @Test func socketActivationServesOnTheInheritedSocket() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = directory.appendingPathComponent("kbtd.sqlite").path
        let activator = try SocketActivator(directory: directory, options: ["--fdname=http"],
                                            command: [TestPaths.kbtdBinary, "serve", "--database", database, "--listen", "127.0.0.1:1"])
        let port = activator.port
        // The first connection makes systemd-socket-activate exec kbtd, which adopts fd 3.
        // (--listen 127.0.0.1:1 would fail to bind: proof the configured address is not used.)
        let connection = try HTTPTestConnection(.tcp(host: "127.0.0.1", port: port))
        let response = try connection.request("POST", "/v1/batches", headers: [("Content-Encoding", "gzip")],
                                              body: gzip(batchBody(samples: shows(20, height: 336))))
        #expect(response.status == 202, "\(response.text)")
        let height = try connection.request("GET", "/v1/height?model=iPhone17,1&language=en-US")
        #expect(height.json?["basis"] == .string("model+language"))
        let text = activator.text
        #expect(text.contains("socket activation: adopting 1 listening socket"))
        #expect(text.contains("(fd 3, http)"))
        #expect(activator.stop() == 0)
    }

    @Test func listenFDsForAnotherProcessAreIgnored() throws {
        let daemon = TestDaemon(environment: ["LISTEN_PID": "1", "LISTEN_FDS": "1", "LISTEN_FDNAMES": "http"])
        try daemon.start()
        #expect(try daemon.get("/healthz").status == 200)
        #expect(!daemon.log_().contains("socket activation"))
    }

    @Test func sigtermUnderLoadLosesNoAcknowledgedBatch() throws {
        let daemon = try TestDaemon().start()
        let bodies = (0..<300).map { _ in gzip(batchBody(samples: shows(5, height: 336))) }
        let acknowledged = ConcurrentResults<Int>()
        // SIGTERM once 20 batches are acknowledged: mid-load by construction, not by a guessed delay.
        acknowledged.onCount(20) { daemon.signal(SIGTERM) }
        DispatchQueue.concurrentPerform(iterations: 6) { worker in
            for i in stride(from: worker, to: bodies.count, by: 6) {
                guard let response = try? daemon.post(bodies[i], encoding: "gzip") else { continue }
                if response.status == 202 { acknowledged.append(i) }
            }
        }
        #expect(daemon.waitForExit() == 0, "SIGTERM must end with exit 0\n\(daemon.log_())")
        let acked = Set(acknowledged.values)
        #expect(!acked.isEmpty)
        try daemon.start()
        for i in acked {
            #expect(try daemon.post(bodies[i], encoding: "gzip").status == 200, "batch \(i) was acknowledged but not stored")
        }
        for i in 0..<bodies.count where !acked.contains(i) {
            let status = try daemon.post(bodies[i], encoding: "gzip").status
            #expect(status == 202 || status == 200)
        }
        #expect(try daemon.stats()["samples"] == .number(Double(bodies.count * 5)))
    }

    @Test func sighupReloadsLimitsAndKeepsRunningConfigOnABadFile() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("kbtd.conf").path
        try "max_samples_per_batch = 5\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try TestDaemon(extraArguments: ["--config", config]).start()
        #expect(try daemon.post(gzip(batchBody(samples: shows(6, height: 336))), encoding: "gzip").status == 400)

        let keptAlive = try daemon.connection()
        #expect(try keptAlive.request("GET", "/healthz").status == 200)

        try "max_samples_per_batch = 10\nmin_samples = 1\n".write(toFile: config, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        #expect(daemon.waitForLog("configuration reloaded"))
        #expect(try daemon.post(gzip(batchBody(samples: shows(6, height: 336))), encoding: "gzip").status == 202)
        #expect(try daemon.get("/v1/height?model=iPhone17,1&language=en-US").json?["basis"] == .string("model+language"))
        // The connection opened before the reload still works.
        #expect(try keptAlive.request("GET", "/healthz").status == 200)

        try "max_samples_per_batch = lots\n".write(toFile: config, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        #expect(daemon.waitForLog("configuration reload failed"))
        #expect(daemon.log_().contains("max_samples_per_batch"))
        #expect(try daemon.post(gzip(batchBody(samples: shows(8, height: 336))), encoding: "gzip").status == 202)
        #expect(daemon.process?.isRunning == true)
    }

    /// `ExecReload=kbtd reload --pid $MAINPID ...`: no /bin/kill needed, and a bad file fails the reload
    /// (exit 78, key named) without disturbing the daemon.
    @Test func reloadCommandChecksTheFileThenSignalsTheDaemon() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("kbtd.conf").path
        try "max_samples_per_batch = 5\n".write(toFile: config, atomically: true, encoding: .utf8)
        let daemon = try TestDaemon(extraArguments: ["--config", config]).start()
        let pid = try #require(daemon.process?.processIdentifier)
        #expect(try daemon.post(gzip(batchBody(samples: shows(6, height: 336))), encoding: "gzip").status == 400)

        try "max_samples_per_batch = lots\n".write(toFile: config, atomically: true, encoding: .utf8)
        // A rejected file signals nobody. The witness dies of the first signal it gets: SIGHUP
        // if `kbtd reload` had sent one (a pending SIGHUP is delivered before the later SIGTERM),
        // else the test's SIGTERM. An order, not a delay.
        let witness = try SpawnedProcess("/usr/bin/tail", ["-f", "/dev/null"])
        let rejectedWitness = try runKBTD(["reload", "--pid", "\(witness.pid)", "--config", config])
        #expect(rejectedWitness.status == 78)
        witness.terminate()
        #expect(witness.exitCode() == 128 + SIGTERM, "kbtd reload signalled the process despite a rejected file")
        let rejected = try runKBTD(["reload", "--pid", "\(pid)", "--config", config])
        #expect(rejected.status == 78)
        #expect(rejected.stderr.contains("max_samples_per_batch") && rejected.stderr.contains(config), "\(rejected.stderr)")

        try "max_samples_per_batch = 10\n".write(toFile: config, atomically: true, encoding: .utf8)
        let accepted = try runKBTD(["reload", "--pid", "\(pid)", "--config", config])
        #expect(accepted.status == 0, "\(accepted.stderr)")
        #expect(daemon.waitForLog("configuration reloaded"))

        #expect(try daemon.post(gzip(batchBody(samples: shows(6, height: 336))), encoding: "gzip").status == 202)

        #expect(daemon.stop() == 0)
        let gone = try runKBTD(["reload", "--pid", "\(pid)", "--config", config])
        #expect(gone.status == 69)
        #expect(gone.stderr.contains("\(pid)") && gone.stderr.contains("no such process"), "\(gone.stderr)")
        #expect(try runKBTD(["reload", "--pid", "1"]).status == 64)
        #expect(try runKBTD(["reload"]).status == 64)
    }

    @Test func logLinesCarrySyslogPrioritiesForTheJournalAndNoColour() throws {
        let plain = try TestDaemon().start()
        let plainLog = plain.log_()
        #expect(!plainLog.contains("\u{1B}["))
        #expect(plainLog.split(separator: "\n").allSatisfy { $0.first?.isNumber == true }, "\(plainLog)")

        // JOURNAL_STREAM must name stderr's device and inode: TestDaemon's log
        // file is the next run's stderr, so stat it first.
        let journal = TestDaemon()
        let nextLog = journal.directory.appendingPathComponent("kbtd-1.log").path
        _ = FileManager.default.createFile(atPath: nextLog, contents: nil)
        var info = stat()
        #expect(stat(nextLog, &info) == 0)
        journal.environment["JOURNAL_STREAM"] = "\(info.st_dev):\(info.st_ino)"
        try journal.start()
        let lines = journal.log_().split(separator: "\n")
        #expect(!lines.isEmpty)
        #expect(lines.allSatisfy { $0.hasPrefix("<5>") || $0.hasPrefix("<6>") || $0.hasPrefix("<7>") }, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("<5>kbtd ready") })
    }

    @Test func unitsVerifyAndInstallPutsFilesWhereSystemdLooks() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let stage = directory.appendingPathComponent("root").path
        let install = Process()
        install.executableURL = URL(fileURLWithPath: TestPaths.repositoryRoot.appendingPathComponent("scripts/install").path)
        install.arguments = ["--destdir", stage, "--binary", TestPaths.kbtdBinary]
        install.standardOutput = FileHandle.nullDevice
        try install.run()
        install.waitUntilExit()
        #expect(install.terminationStatus == 0)
        for path in ["usr/local/bin/kbtd", "etc/systemd/system/kbtd.service", "etc/systemd/system/kbtd.socket",
                     "etc/kbtd/kbtd.conf", "usr/local/share/doc/kbtd/README.md"] {
            #expect(FileManager.default.fileExists(atPath: "\(stage)/\(path)"), "\(path)")
        }

        // systemd-analyze verify needs ExecStart= to exist: point it at the staged binary.
        let units = directory.appendingPathComponent("units")
        try FileManager.default.createDirectory(at: units, withIntermediateDirectories: true)
        let service = try String(contentsOfFile: "\(stage)/etc/systemd/system/kbtd.service", encoding: .utf8)
            .replacingOccurrences(of: "/usr/local/bin/kbtd", with: "\(stage)/usr/local/bin/kbtd")
        try service.write(to: units.appendingPathComponent("kbtd.service"), atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(atPath: "\(stage)/etc/systemd/system/kbtd.socket",
                                         toPath: units.appendingPathComponent("kbtd.socket").path)
        let verify = Process()
        verify.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        verify.arguments = ["systemd-analyze", "verify", "kbtd.socket", "kbtd.service"]
        verify.currentDirectoryURL = units
        let output = Pipe()
        verify.standardOutput = output
        verify.standardError = output
        try verify.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        verify.waitUntilExit()
        #expect(verify.terminationStatus == 0, "\(text)")
        #expect(text.isEmpty, "\(text)")
    }
}
