import Foundation
import KBTDServer
import Testing

@Suite("Settings")
struct SettingsTests {
    static let shippedConfig = TestPaths.repositoryRoot.appendingPathComponent("Config/kbtd.conf").path

    @Test func shippedConfigFileHoldsEveryKeyAtItsDefault() throws {
        let text = try String(contentsOfFile: Self.shippedConfig, encoding: .utf8)
        for key in SettingsLoader.keys {
            #expect(text.contains("\n\(key) ="), "Config/kbtd.conf lacks \(key)")
        }
        let loaded = try SettingsLoader.load(configFile: Self.shippedConfig, environment: [:], flags: [:])
        #expect(loaded == ServerSettings())
    }

    @Test func listenAddresses() {
        #expect(ListenAddress(parsing: "127.0.0.1:8420") == ListenAddress(host: "127.0.0.1", port: 8420))
        #expect(ListenAddress(parsing: "[::1]:9000") == ListenAddress(host: "::1", port: 9000))
        #expect(ListenAddress(parsing: ":8420") == ListenAddress(host: "0.0.0.0", port: 8420))
        #expect(ListenAddress(parsing: "localhost") == nil)
        #expect(ListenAddress(parsing: "h:70000") == nil)
    }
}
