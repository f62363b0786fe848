/// Reads a request body chunk by chunk with `StreamingInflater`'s contract (the
/// same results, errors and caps), faster for the common body: a gzip body of
/// at most `holdLimit` compressed bytes is held as it arrives and, if it is one
/// whole member `WholeMemberInflater` takes, inflated in one call at `finish()`.
///
///     let inflater = BodyInflater(coding: .gzip, maxOutput: 8 << 20)
///     for chunk in chunks { try inflater.feed(chunk) }
///     let json = try inflater.finish()
///
/// Anything else goes through zlib exactly as `StreamingInflater` would, fed the
/// same chunks: identity and deflate bodies from the first byte, a gzip body as
/// soon as its header rules the fast path out (not a gzip header, FHCRC set) or
/// it outgrows `holdLimit` (so a large bomb still stops at the cap while it
/// streams), and at `finish()` whatever `WholeMemberInflater` declines. A held
/// body's refusal (corrupt, trailing bytes, over the cap) therefore comes at
/// `finish()` instead of at the chunk that showed it; the error is the same.
public final class BodyInflater {
    public let coding: ContentCoding
    public let maxOutput: Int
    /// Compressed bytes held for the one-call path at most; past it, zlib streams.
    public let holdLimit: Int
    /// Whether `finish()` inflated the body in one call (libdeflate) rather than with zlib.
    public private(set) var inflatedWhole = false

    /// The compressed body so far, while the one-call path is still possible.
    private var held: [UInt8] = []
    /// Where each fed chunk ended in `held`, to replay them to zlib unchanged.
    private var chunkEnds: [Int] = []
    /// zlib, once the one-call path is ruled out.
    private var streaming: StreamingInflater?

    /// 256 KiB of gzip: far above a phone's batch (about 1 KB per 100 samples).
    public static let defaultHoldLimit = 256 << 10

    public init(coding: ContentCoding, maxOutput: Int, holdLimit: Int = BodyInflater.defaultHoldLimit) {
        self.coding = coding
        self.maxOutput = maxOutput
        self.holdLimit = holdLimit
        if coding != .gzip { streaming = StreamingInflater(coding: coding, maxOutput: maxOutput) }
    }

    /// Feeds the next chunk of the body.
    public func feed(_ bytes: some Collection<UInt8>) throws(InflateError) {
        if let streaming { return try streaming.feed(bytes) }
        guard held.count + bytes.count <= holdLimit else {
            try stream()
            return try streaming!.feed(bytes)
        }
        held.append(contentsOf: bytes)
        chunkEnds.append(held.count)
        // Header bytes that already rule the one-call path out: let zlib judge them now.
        if held.count >= 4 && !GzipMemberShape.admitsStart(held[0], held[1], held[2], held[3]) {
            try stream()
        }
    }

    /// Declares the body complete; throws unless the stream ended exactly here.
    public func finish() throws(InflateError) -> [UInt8] {
        if streaming == nil {
            if let output = WholeMemberInflater.inflate(held, maxOutput: maxOutput) {
                inflatedWhole = true
                return output
            }
            try stream()
        }
        return try streaming!.finish()
    }

    /// Inflates a whole body at once, with `feed` and `finish`'s results and errors: a gzip body
    /// that is one whole member goes to `WholeMemberInflater` (one libdeflate call), anything else
    /// to zlib. For a caller that holds the compressed body until it has all arrived, so that a
    /// body still arriving never holds inflated bytes.
    ///
    ///     let json = try BodyInflater.inflate(body, coding: .gzip, maxOutput: 8 << 20)
    public static func inflate(_ body: [UInt8], coding: ContentCoding, maxOutput: Int) throws(InflateError) -> [UInt8] {
        if coding == .gzip, let output = WholeMemberInflater.inflate(body, maxOutput: maxOutput) {
            return output
        }
        let inflater = StreamingInflater(coding: coding, maxOutput: maxOutput)
        try inflater.feed(body)
        return try inflater.finish()
    }

    /// Hands the body to zlib: the held chunks first, as they arrived.
    private func stream() throws(InflateError) {
        let inflater = StreamingInflater(coding: coding, maxOutput: maxOutput)
        streaming = inflater
        var start = 0
        for end in chunkEnds {
            try inflater.feed(held[start..<end])
            start = end
        }
        held = []
        chunkEnds = []
    }
}
