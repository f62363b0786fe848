import CZlib

/// The body encodings `POST /v1/batches` accepts.
public enum ContentCoding: Sendable, Equatable {
    case identity
    /// RFC 1952; several members form one stream.
    case gzip
    /// RFC 1950 (zlib-wrapped), or raw RFC 1951 when the first two bytes are not a zlib header.
    case deflate

    /// Parses a `Content-Encoding` value; `nil` for anything unsupported,
    /// including stacked codings such as `gzip, gzip`. Empty means identity.
    public init?(headerValue: String?) {
        let value = (headerValue ?? "").trimmingASCIIWhitespace().lowercased()
        switch value {
        case "", "identity": self = .identity
        case "gzip", "x-gzip": self = .gzip
        case "deflate": self = .deflate
        default: return nil
        }
    }

    /// Whether two bytes open a zlib stream (RFC 1950: deflate, a window of at most 32 KiB, the
    /// check bits): what tells a `deflate` body's zlib wrapper from raw deflate.
    public static func isZlibHeader(_ cmf: UInt8, _ flg: UInt8) -> Bool {
        cmf & 0x0F == 8 && cmf >> 4 <= 7 && (Int(cmf) << 8 | Int(flg)) % 31 == 0
    }

    /// The coding a body's first bytes show, if any: gzip's magic number or a zlib header. For
    /// telling a client that sent a compressed body without `Content-Encoding`.
    public static func sniffed(_ body: [UInt8]) -> ContentCoding? {
        guard body.count >= 2 else { return nil }
        if body[0] == 0x1F && body[1] == 0x8B { return .gzip }
        return isZlibHeader(body[0], body[1]) ? .deflate : nil
    }
}

/// Why a compressed body was refused.
public enum InflateError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The stream is not valid for its coding (zlib's message attached).
    case corrupt(String)
    /// The body ended before the compressed stream did.
    case truncated
    /// Bytes follow the end of the compressed stream.
    case trailingData
    /// Inflating would exceed the cap (bytes).
    case tooLarge(limit: Int)

    public var description: String {
        switch self {
        case .corrupt(let message): "corrupt compressed stream: \(message)"
        case .truncated: "compressed stream is truncated"
        case .trailingData: "unexpected bytes after the end of the compressed stream"
        case .tooLarge(let limit): "decompressed body exceeds \(limit) bytes"
        }
    }
}

/// Inflates a body chunk by chunk as it arrives, strictly: the output cap is
/// exact (never more than `maxOutput + 1` bytes are produced before it
/// throws), truncated streams and trailing bytes are errors, and gzip members
/// are concatenated as RFC 1952 says.
public final class StreamingInflater {
    public let coding: ContentCoding
    public let maxOutput: Int
    public private(set) var output: [UInt8] = []

    private var stream: UnsafeMutablePointer<z_stream>?
    private var streamEnded = false
    private var started = false
    /// Leading bytes of a deflate body kept until the zlib/raw decision can be made.
    private var pendingHeader: [UInt8] = []
    /// zlib's output window, made when a stream opens: an identity body never needs it (zeroing
    /// 64 KiB per body was a visible share of an uncompressed batch's CPU).
    private var scratch: [UInt8] = []

    public init(coding: ContentCoding, maxOutput: Int) {
        self.coding = coding
        self.maxOutput = maxOutput
    }

    deinit {
        if let stream {
            inflateEnd(stream)
            stream.deallocate()
        }
    }

    /// Feeds the next chunk of the body.
    public func feed(_ bytes: some Collection<UInt8>) throws(InflateError) {
        if coding == .identity {
            guard output.count + bytes.count <= maxOutput else { throw .tooLarge(limit: maxOutput) }
            output.append(contentsOf: bytes)
            return
        }
        var chunk = Array(bytes)
        if stream == nil {
            if coding == .deflate {
                pendingHeader.append(contentsOf: chunk)
                guard pendingHeader.count >= 2 else { return }
                chunk = pendingHeader
                pendingHeader = []
                try open(windowBits: ContentCoding.isZlibHeader(chunk[0], chunk[1]) ? 15 : -15)
            } else {
                try open(windowBits: 15 + 16)
            }
        }
        try chunk.withUnsafeMutableBufferPointer { buffer throws(InflateError) in
            try inflate(buffer)
        }
    }

    /// Declares the body complete; throws unless the stream ended exactly here.
    public func finish() throws(InflateError) -> [UInt8] {
        if coding != .identity {
            guard stream != nil, streamEnded else { throw .truncated }
        }
        return output
    }

    private func open(windowBits: Int32) throws(InflateError) {
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        stream.initialize(to: z_stream())
        guard kbtd_inflateInit2(stream, windowBits) == Z_OK else {
            stream.deallocate()
            throw .corrupt("cannot initialise zlib")
        }
        self.stream = stream
        scratch = [UInt8](repeating: 0, count: 64 * 1024)
    }

    private func inflate(_ input: UnsafeMutableBufferPointer<UInt8>) throws(InflateError) {
        guard let stream, let base = input.baseAddress, input.count > 0 else { return }
        var offset = 0
        while true {
            if streamEnded {
                guard offset < input.count else { return }
                // Only gzip may continue: a new member starts right after the last.
                guard coding == .gzip else { throw .trailingData }
                inflateReset(stream)
                streamEnded = false
            }
            let room = min(scratch.count, maxOutput - output.count + 1)
            let (status, consumed, produced) = scratch.withUnsafeMutableBufferPointer { out in
                stream.pointee.next_in = base + offset
                stream.pointee.avail_in = UInt32(input.count - offset)
                stream.pointee.next_out = out.baseAddress
                stream.pointee.avail_out = UInt32(room)
                let status = CZlib.inflate(stream, Z_NO_FLUSH)
                return (status, input.count - offset - Int(stream.pointee.avail_in), room - Int(stream.pointee.avail_out))
            }
            offset += consumed
            if produced > 0 {
                guard output.count + produced <= maxOutput else { throw .tooLarge(limit: maxOutput) }
                output.append(contentsOf: scratch[0..<produced])
            }
            switch status {
            case Z_STREAM_END:
                streamEnded = true
                if offset == input.count { return }
                // A gzip member of zero-length trailer bytes cannot follow; a
                // lone trailing byte that is not a member header fails in zlib.
                if coding == .gzip, input.count - offset >= 1, input[offset] != 0x1F { throw .trailingData }
            case Z_OK, Z_BUF_ERROR:
                let outputFull = produced == room
                if offset == input.count && !outputFull { return }
                if status == Z_BUF_ERROR && !outputFull { return }
            default:
                let message = stream.pointee.msg.map { String(cString: $0) } ?? "zlib error \(status)"
                throw .corrupt(message)
            }
        }
    }
}

extension String {
    func trimmingASCIIWhitespace() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
        return String(scalars)
    }
}
