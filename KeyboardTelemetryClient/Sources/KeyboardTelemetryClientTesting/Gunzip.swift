internal import CTelemetryZlib
import Foundation

/// gzip decompression for tests: reads back what `Gzip.compress` wrote.
public enum Gunzip {
    /// Why a stream did not inflate.
    public struct Failure: Error {
        public var status: Int32
    }

    /// The bytes of one whole gzip member; throws on a truncated or corrupt stream.
    public static func decompress(_ data: Data) throws -> Data {
        var stream = z_stream()
        guard telemetry_inflateInit2(&stream, 15 + 16) == Z_OK else { throw Failure(status: Z_MEM_ERROR) }
        defer { inflateEnd(&stream) }
        var input = [UInt8](data)
        var output = Data()
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var status: Int32 = Z_OK
        try input.withUnsafeMutableBufferPointer { inBuffer in
            stream.next_in = inBuffer.baseAddress
            stream.avail_in = UInt32(inBuffer.count)
            repeat {
                let produced = chunk.withUnsafeMutableBufferPointer { outBuffer -> Int in
                    stream.next_out = outBuffer.baseAddress
                    stream.avail_out = UInt32(outBuffer.count)
                    status = inflate(&stream, Z_NO_FLUSH)
                    return outBuffer.count - Int(stream.avail_out)
                }
                output.append(contentsOf: chunk[0..<produced])
                guard status == Z_OK || status == Z_STREAM_END else { throw Failure(status: status) }
                if status == Z_OK && produced == 0 && stream.avail_in == 0 { throw Failure(status: Z_BUF_ERROR) }  // truncated
            } while status != Z_STREAM_END
        }
        return output
    }
}
