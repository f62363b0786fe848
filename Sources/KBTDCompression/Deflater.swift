import CZlib

/// One-shot compression for clients, tests and benchmarks.
public enum Deflater {
    public enum Format: Sendable {
        case gzip, zlib, raw

        var windowBits: Int32 {
            switch self {
            case .gzip: 15 + 16
            case .zlib: 15
            case .raw: -15
            }
        }
    }

    /// Compresses `data` whole into one stream of `format`.
    public static func compress(_ data: [UInt8], format: Format, level: Int32 = 6) -> [UInt8] {
        var stream = z_stream()
        precondition(kbtd_deflateInit2(&stream, level, format.windowBits) == Z_OK, "deflateInit2 failed")
        defer { deflateEnd(&stream) }
        var input = data
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, UInt(data.count))) + 32)
        let produced = input.withUnsafeMutableBufferPointer { inBuf in
            output.withUnsafeMutableBufferPointer { outBuf in
                stream.next_in = inBuf.baseAddress
                stream.avail_in = UInt32(inBuf.count)
                stream.next_out = outBuf.baseAddress
                stream.avail_out = UInt32(outBuf.count)
                let status = deflate(&stream, Z_FINISH)
                precondition(status == Z_STREAM_END, "deflate did not finish")
                return outBuf.count - Int(stream.avail_out)
            }
        }
        return Array(output[0..<produced])
    }
}
