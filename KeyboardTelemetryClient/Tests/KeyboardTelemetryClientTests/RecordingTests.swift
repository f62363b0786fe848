import Foundation
import KeyboardTelemetryClient
import KeyboardTelemetryClientTesting
import Testing

/// Recording and encoding, without a server.
@Suite("KeyboardTelemetryClient recording and encoding")
struct RecordingTests {
    @Test(arguments: [0, 1, 100, 70_000])
    func gzipRoundTrips(size: Int) throws {
        var generator = SystemRandomNumberGenerator()
        let text = Data((0..<size).map { _ in UInt8(ascii: "a") + UInt8(generator.next() % 8) })
        let compressed = Gzip.compress(text)
        #expect(compressed.prefix(2) == Data([0x1f, 0x8b]), "gzip magic")
        #expect(try Gunzip.decompress(compressed) == text)
        #expect(throws: Gunzip.Failure.self) { try Gunzip.decompress(compressed.dropLast(4)) }
    }

    @Test func keyboardTypesMapFromUIKeyboardTypeRawValues() {
        #expect(KeyboardType(uiKeyboardTypeRawValue: 0) == .default)
        #expect(KeyboardType(uiKeyboardTypeRawValue: 4) == .numberPad)
        #expect(KeyboardType(uiKeyboardTypeRawValue: 7) == .emailAddress)
        #expect(KeyboardType(uiKeyboardTypeRawValue: 11) == .asciiCapableNumberPad)
        #expect(KeyboardType(uiKeyboardTypeRawValue: 12) == nil && KeyboardType(uiKeyboardTypeRawValue: -1) == nil)
    }

    @Test func nonFiniteSamplesAreDiscardedAndCounted() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let client = KeyboardTelemetryClient(device: Fixtures.device, configuration: Fixtures.configuration(directory: directory),
                                             transport: Fixtures.refusing())
        client.record(KeyboardSample(event: .show, height: .nan, language: "en-US", orientation: .portrait))
        client.record(KeyboardSample(event: .show, height: 336, duration: .infinity, language: "en-US", orientation: .portrait))
        client.record(Fixtures.show())
        #expect(client.pendingSampleCount == 1)
        #expect(client.counters.samplesRecorded == 3 && client.counters.samplesDiscarded == 2)
        await client.shutdown()
    }

    @Test func uploadsNameTheirQueueFileForTransportsThatSendFromAFile() async throws {
        let directory = Fixtures.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Read the file while the request is in flight: it holds exactly the body.
        let transport = ScriptedTransport { request in
            guard request.method == "POST" else { return TransportResponse(status: 404) }
            let file = try #require(request.bodyFile)
            #expect(try Data(contentsOf: file) == request.body)
            return ScriptedTransport.accept(request)
        }
        let client = KeyboardTelemetryClient(device: Fixtures.device, configuration: Fixtures.configuration(directory: directory),
                                             transport: transport)
        client.start()
        client.record(Fixtures.show())
        #expect(await client.sendInBackground())
        let file = try #require(transport.batches.first?.file)
        #expect(file.deletingLastPathComponent().lastPathComponent == "queue" && file.lastPathComponent.hasSuffix(".json.gz"))
        await client.shutdown()
    }
}
