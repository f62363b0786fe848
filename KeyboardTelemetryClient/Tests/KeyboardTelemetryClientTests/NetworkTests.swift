import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import KeyboardTelemetryClient
import KeyboardTelemetryClientTesting
import Testing

/// The network manners an app ships with, and the background-session transport's plumbing
/// (the background session itself exists only on Apple platforms).
@Suite("KeyboardTelemetryClient network settings")
struct NetworkTests {
    @Test func theDefaultsSpareLowDataModeAndExpensiveNetworksAndWaitForConnectivity() {
        let configuration = TelemetryConfiguration(baseURL: URL(string: "https://kbtd.example.com")!,
                                                   storageDirectory: Fixtures.temporaryDirectory())
        #expect(configuration.network.allowsConstrainedNetworkAccess == false)
        #expect(configuration.network.allowsExpensiveNetworkAccess == false)
        #expect(configuration.network.waitsForConnectivity == true)
        #expect(configuration.backgroundSessionIdentifier == nil)
        #expect(configuration.excludeFromBackup == true)
        #expect(configuration.maxSampleAge == 30 * 86_400, "kbtd's FieldRules.maxAge")
        #if canImport(Darwin)
        let session = URLSessionConfiguration.ephemeral
        configuration.network.apply(to: session)
        #expect(!session.allowsConstrainedNetworkAccess && !session.allowsExpensiveNetworkAccess && session.waitsForConnectivity)
        #endif
    }

    @Test func backgroundUploadsGoFromTheFileAndEverythingElseToTheFallback() async throws {
        let fallback = ScriptedTransport { _ in TransportResponse(status: 304) }
        let transport = BackgroundUploadTransport(identifier: "kbtd-test-\(UUID().uuidString)", fallback: fallback)
        let heights = try await transport.send(TransportRequest(method: "GET", url: URL(string: "http://127.0.0.1:9/v1/heights")!))
        #expect(heights.status == 304 && fallback.requests.count == 1)

        // An upload from a file to a port nothing listens on: the delegate's answer (an error) reaches the caller.
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let file = directory.appendingPathComponent("batch.json.gz")
        try Gzip.compress(Data("{}".utf8)).write(to: file)
        await #expect(throws: (any Error).self) {
            try await transport.send(TransportRequest(method: "POST", url: URL(string: "http://127.0.0.1:9/v1/batches")!,
                                                      body: try Data(contentsOf: file), bodyFile: file, timeout: 10))
        }
        #expect(fallback.requests.count == 1, "uploads do not go to the fallback")
    }
}
