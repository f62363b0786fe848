import Foundation
@testable import KBTDServer
import Testing

/// The slips a newcomer makes in the first hour, each answered with what to do: a typo in a
/// setting's name (file or environment), a config file that cannot be read, a gzip body sent
/// without its `Content-Encoding`.
@Suite("First-hour slips get a hint")
struct FirstHourTests {
    @Test func aTypoInAConfigKeySuggestsTheKey() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("kbtd.conf").path
        try "max_samples_per_bach = 10\n".write(toFile: file, atomically: true, encoding: .utf8)
        #expect {
            _ = try SettingsLoader.load(configFile: file, environment: [:], flags: [:])
        } throws: { error in
            "\(error)".contains("unknown key 'max_samples_per_bach'") && "\(error)".contains("did you mean 'max_samples_per_batch'?")
        }
        // Nothing near: no suggestion.
        try "colour = blue\n".write(toFile: file, atomically: true, encoding: .utf8)
        #expect {
            _ = try SettingsLoader.load(configFile: file, environment: [:], flags: [:])
        } throws: { error in
            "\(error)".contains("unknown key 'colour'") && !"\(error)".contains("did you mean")
        }
    }

    @Test func aConfigFileThatCannotBeReadSaysWhy() throws {
        let directory = TestPaths.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let missing = directory.appendingPathComponent("nowhere.conf").path
        #expect {
            _ = try SettingsLoader.load(configFile: missing, environment: [:], flags: [:])
        } throws: { "\($0)" == "cannot read config file \(missing): No such file or directory" }
        #expect {
            _ = try SettingsLoader.load(configFile: directory.path, environment: [:], flags: [:])
        } throws: { "\($0)" == "cannot read config file \(directory.path): it is a directory" }
    }

    @Test func aTypoInAKBTDVariableIsWarnedNotIgnored() {
        let warnings = SettingsLoader.unknownVariables(in: [
            "KBTD_MAX_KEY": "10", "KBTD_MAX_KEYS": "10", "KBTD_CONFIG": "/etc/kbtd.conf", "KBTD_SOURCE_KEY": "00",
            "KBTD_WHATEVER_THIS_IS": "1", "HOME": "/root",
        ])
        #expect(warnings == [
            "environment variable KBTD_MAX_KEY is not a kbtd setting and is ignored (did you mean KBTD_MAX_KEYS?)",
            "environment variable KBTD_WHATEVER_THIS_IS is not a kbtd setting and is ignored",
        ])
    }

    @Test func aCompressedBodyWithoutItsEncodingGetsAHint() async throws {
        let app = try InProcessApp()
        let body = batchBody(samples: shows(2, height: 336))
        let gzipped = try await app.post(gzip(body), encoding: nil)
        #expect(gzipped.status == 400)
        #expect(gzipped.text.contains("the body looks gzip-compressed: send Content-Encoding: gzip"), "\(gzipped.text)")
        let plain = try await app.post(Array("{not json".utf8), encoding: nil)
        #expect(plain.status == 400)
        #expect(!plain.text.contains("looks"), "\(plain.text)")
        #expect(try await app.post(body, encoding: nil).status == 202)
    }
}
