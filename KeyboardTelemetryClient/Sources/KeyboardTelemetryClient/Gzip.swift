internal import CTelemetryZlib
import Foundation

/// gzip (RFC 1952) through the system zlib, available on Linux and iOS alike.
public enum Gzip {
    /// Compresses `data` into one gzip member.
    public static func compress(_ data: Data, level: Int32 = 6) -> Data {
        var stream = z_stream()
        guard telemetry_deflateInit2(&stream, level, 15 + 16) == Z_OK else {
            preconditionFailure("deflateInit2 failed: out of memory")
        }
        defer { deflateEnd(&stream) }
        var input = [UInt8](data)
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, UInt(input.count))) + 32)
        let produced = input.withUnsafeMutableBufferPointer { inBuffer in
            output.withUnsafeMutableBufferPointer { outBuffer in
                stream.next_in = inBuffer.baseAddress
                stream.avail_in = UInt32(inBuffer.count)
                stream.next_out = outBuffer.baseAddress
                stream.avail_out = UInt32(outBuffer.count)
                // deflateBound guarantees room for the whole stream in one call.
                let status = deflate(&stream, Z_FINISH)
                precondition(status == Z_STREAM_END, "deflate did not finish within deflateBound")
                return outBuffer.count - Int(stream.avail_out)
            }
        }
        return Data(output[0..<produced])
    }
}
