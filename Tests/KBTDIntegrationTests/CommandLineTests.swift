import Foundation
import KBTDCore
import Testing

@Suite("Command line", .ownThreads, .timeLimit(.minutes(10)))
struct CommandLineTests {
    @Test func statsFormatsAndFilters() async throws {
        let daemon = try InProcessApp()
        var samples = shows(30, height: 336) + shows(22, height: 344, language: "ja-JP")
        for i in samples.indices { samples[i].coldStartMs = Double(300 + i) }
        #expect(try await daemon.post(gzip(batchBody(samples: samples)), encoding: "gzip").status == 202)
        #expect(try await daemon.post(gzip(batchBody(model: "iPhone15,2", os: "18.6.2", samples: shows(3, height: 336))),
                                encoding: "gzip").status == 202)

        let table = try runKBTD(["stats", "--database", daemon.database, "--format", "table"])
        #expect(table.status == 0)
        let lines = table.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("model") == true)
        #expect(lines.count == 5)  // header, 3 keys, total
        #expect(lines.last == "3 keys, 55 samples")
        // Aligned: every row's "samples" column ends where the header's does.
        let headerEnd = lines[0].range(of: "samples")!.upperBound.utf16Offset(in: lines[0])
        for line in lines[1...3] {
            let index = line.index(line.startIndex, offsetBy: headerEnd - 1)
            #expect(line[index].isNumber, "\(line)")
        }

        let csv = try runKBTD(["stats", "--database", daemon.database, "--format", "csv", "--language", "ja-JP"])
        let csvLines = csv.stdout.split(separator: "\n")
        #expect(csvLines.count == 2)
        #expect(csvLines[0].hasPrefix("model,os,language,orientation,keyboard_type,samples"))
        #expect(csvLines[1].hasPrefix("\"iPhone17,1\",26,ja-JP,portrait,default,22,22,344,344,344"))

        let filtered = try daemon.stats(["--model", "iPhone15,2", "--os", "18"])
        #expect(filtered["keys"] == .number(1))
        #expect(filtered["samples"] == .number(3))
        let none = try daemon.stats(["--os", "17.0"])
        #expect(none["keys"] == .number(0))
    }

    @Test func statsWorksWhileTheDaemonRunsAndAfterItStops() throws {
        let daemon = try TestDaemon().start()
        #expect(try daemon.post(gzip(batchBody(samples: shows(4, height: 336))), encoding: "gzip").status == 202)
        #expect(try daemon.stats()["samples"] == .number(4))
        #expect(daemon.stop() == 0)
        #expect(try daemon.stats()["samples"] == .number(4))
    }

    @Test func exitCodes() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let missing = directory.appendingPathComponent("none.sqlite").path

        let noDatabase = try runKBTD(["stats", "--database", missing])
        #expect(noDatabase.status == 66)
        #expect(noDatabase.stderr.contains(missing))
        let noDatabaseHeight = try runKBTD(["height", "--model", "iPhone17,1", "--language", "en-US", "--database", missing])
        #expect(noDatabaseHeight.status == 66)
        // Another application's SQLite file: named as not kbtd's, not as SQLite's "no such table".
        let foreign = directory.appendingPathComponent("foreign.sqlite").path
        let made = try runToEnd("/usr/bin/sqlite3", [foreign, "CREATE TABLE notes (text); INSERT INTO notes VALUES ('x');"], timeout: 60)
        #expect(made.status == 0, "\(made.stderr)")
        for command in [["stats"], ["export"]] {
            let result = try runKBTD(command + ["--database", foreign])
            #expect(result.status == 66 && result.stderr.contains("not a kbtd database"), "\(command): \(result.stderr)")
            #expect(!result.stderr.contains("no such table"), "\(command): \(result.stderr)")
        }

        #expect(try runKBTD(["stats", "--format", "xml"]).status == 64)
        #expect(try runKBTD(["stats", "--os", "latest"]).status == 64)
        #expect(try runKBTD(["height", "--model", "iPhone17,1"]).status == 64)
        #expect(try runKBTD(["height", "--model", "iPhone17,1", "--language", "en-US", "--orientation", "up"]).status == 64)
        #expect(try runKBTD(["frobnicate"]).status == 64)

        let version = try runKBTD(["--version"])
        #expect(version.status == 0 && !version.stdout.isEmpty)
        let help = try runKBTD(["help"])
        #expect(help.status == 0 && help.stdout.contains("serve") && help.stdout.contains("stats"))
    }

    @Test func badConfigurationExits78NamingKeyAndSource() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("kbtd.conf").path
        let database = directory.appendingPathComponent("kbtd.sqlite").path

        try "# comment\nlisten = 127.0.0.1:0\nmax_samples = 5\n".write(toFile: config, atomically: true, encoding: .utf8)
        let unknown = try runKBTD(["serve", "--config", config, "--database", database])
        #expect(unknown.status == 78)
        #expect(unknown.stderr.contains("max_samples") && unknown.stderr.contains("\(config):3"))

        try "min_samples = many\n".write(toFile: config, atomically: true, encoding: .utf8)
        let badValue = try runKBTD(["serve", "--config", config, "--database", database])
        #expect(badValue.status == 78)
        #expect(badValue.stderr.contains("min_samples") && badValue.stderr.contains(config))

        let badEnvironment = try runKBTD(["serve", "--database", database], environment: ["KBTD_MAX_COMPRESSED_BYTES": "-1"])
        #expect(badEnvironment.status == 78)
        #expect(badEnvironment.stderr.contains("KBTD_MAX_COMPRESSED_BYTES"))

        let badFlag = try runKBTD(["serve", "--listen", "nowhere", "--database", database])
        #expect(badFlag.status == 78)
        #expect(badFlag.stderr.contains("--listen"))

        let missingFile = try runKBTD(["serve", "--config", directory.appendingPathComponent("nope.conf").path])
        #expect(missingFile.status == 78)
    }

    @Test func precedenceIsFlagThenEnvironmentThenFileThenDefault() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = directory.appendingPathComponent("kbtd.conf").path
        try "min_samples = 1\ndefault_height_portrait = 300\ndefault_height_landscape = 200\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        let other = directory.appendingPathComponent("from-environment.sqlite").path
        let daemon = try TestDaemon(extraArguments: ["--config", config],
                                    environment: ["KBTD_DEFAULT_HEIGHT_PORTRAIT": "310", "KBTD_DATABASE": other]).start()
        // File: landscape default 200. Environment beats file: portrait default 310.
        #expect(try daemon.get("/v1/height?model=iPhone1,1&language=en-US&orientation=landscape").json?["height"] == .number(200))
        #expect(try daemon.get("/v1/height?model=iPhone1,1&language=en-US").json?["height"] == .number(310))
        // File: min_samples 1, so a single sample answers.
        #expect(try daemon.post(gzip(batchBody(samples: shows(1, height: 336))), encoding: "gzip").status == 202)
        #expect(try daemon.get("/v1/height?model=iPhone17,1&language=en-US").json?["basis"] == .string("model+language"))
        // The flag (--database, set by TestDaemon) beat KBTD_DATABASE: the file exists where the flag said.
        #expect(FileManager.default.fileExists(atPath: daemon.database))
        #expect(!FileManager.default.fileExists(atPath: other))
    }
}
