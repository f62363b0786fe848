import KBTDCompression
import Testing

@Suite("Streaming inflate")
struct CompressionTests {
    let payload = Array(String(repeating: "{\"keyboard\":336}", count: 5_000).utf8)

    func inflate(_ bytes: [UInt8], _ coding: ContentCoding, max: Int = 8 << 20, chunk: Int = 7) throws -> [UInt8] {
        let inflater = StreamingInflater(coding: coding, maxOutput: max)
        var offset = 0
        while offset < bytes.count {
            try inflater.feed(bytes[offset..<min(bytes.count, offset + chunk)])
            offset += chunk
        }
        return try inflater.finish()
    }

    @Test(arguments: [(Deflater.Format.gzip, ContentCoding.gzip), (.zlib, .deflate), (.raw, .deflate)])
    func roundTripsInSmallChunks(format: Deflater.Format, coding: ContentCoding) throws {
        #expect(try inflate(Deflater.compress(payload, format: format), coding) == payload)
        #expect(try inflate(Deflater.compress(payload, format: format), coding, chunk: 1 << 20) == payload)
    }

    @Test func concatenatedGzipMembersFormOneStream() throws {
        let a = Array("{\"a\":".utf8), b = Array("1}".utf8)
        let both = Deflater.compress(a, format: .gzip) + Deflater.compress(b, format: .gzip)
        #expect(try inflate(both, .gzip, chunk: 3) == a + b)
    }

    @Test(arguments: [ContentCoding.gzip, .deflate])
    func truncatedStreamIsAnError(coding: ContentCoding) {
        let full = Deflater.compress(payload, format: coding == .gzip ? .gzip : .zlib)
        #expect(throws: InflateError.truncated) { try inflate(Array(full.dropLast(5)), coding) }
        #expect(throws: InflateError.truncated) { try inflate([], coding) }
    }

    @Test(arguments: [ContentCoding.gzip, .deflate])
    func trailingGarbageIsAnError(coding: ContentCoding) {
        let full = Deflater.compress(payload, format: coding == .gzip ? .gzip : .zlib)
        #expect(throws: InflateError.self) { try inflate(full + Array("garbage".utf8), coding) }
    }

    @Test func corruptStreamIsAnError() {
        var bytes = Deflater.compress(payload, format: .gzip)
        for i in 12..<40 { bytes[i] ^= 0x5A }
        #expect(throws: InflateError.self) { try inflate(bytes, .gzip) }
    }

    @Test func capIsExact() throws {
        let data = [UInt8](repeating: 0x41, count: 1000)
        let compressed = Deflater.compress(data, format: .gzip)
        #expect(try inflate(compressed, .gzip, max: 1000) == data)
        #expect(throws: InflateError.tooLarge(limit: 999)) { try inflate(compressed, .gzip, max: 999) }
        #expect(throws: InflateError.tooLarge(limit: 999)) { try inflate(data, .identity, max: 999) }
    }

    @Test func bombStopsAtTheCapWithoutInflatingEverything() throws {
        // 64 MiB of zeros compress to ~64 KiB; the cap stops inflation at 1 MiB.
        let bomb = Deflater.compress([UInt8](repeating: 0, count: 64 << 20), format: .gzip, level: 9)
        let inflater = StreamingInflater(coding: .gzip, maxOutput: 1 << 20)
        #expect(throws: InflateError.tooLarge(limit: 1 << 20)) { try inflater.feed(bomb) }
        #expect(inflater.output.count <= 1 << 20)
    }

    @Test func contentEncodingHeaderValues() {
        #expect(ContentCoding(headerValue: nil) == .identity)
        #expect(ContentCoding(headerValue: "") == .identity)
        #expect(ContentCoding(headerValue: " GZIP ") == .gzip)
        #expect(ContentCoding(headerValue: "deflate") == .deflate)
        #expect(ContentCoding(headerValue: "br") == nil)
        #expect(ContentCoding(headerValue: "gzip, gzip") == nil)
    }
}
