import KBTDCompression

/// The differential oracle for inflate: `BodyInflater` (libdeflate for a whole
/// gzip member) against `StreamingInflater` (zlib alone) on the same chunks,
/// `BodyInflater.inflate` (what the daemon runs on a body held whole) against
/// zlib fed the whole body, and `WholeMemberInflater` against zlib on the whole body read as gzip. Only the fuzz harness and the tests call it.
///
///     let (json, difference) = InflateOracle.inflate(body, coding: .gzip, chunk: 49, maxOutput: 1 << 20)
///     if let difference { fatalError(difference) }
public enum InflateOracle {
    /// `json`: what `BodyInflater.inflate` produced (nil when it refused the body);
    /// `difference`: nil when both inflaters gave the same bytes or the same error,
    /// and `WholeMemberInflater` accepted nothing zlib refuses.
    public static func inflate(_ body: ArraySlice<UInt8>, coding: ContentCoding, chunk: Int, maxOutput: Int)
        -> (json: [UInt8]?, difference: String?)
    {
        let reference = StreamingInflater(coding: coding, maxOutput: maxOutput)
        let expected = run(body, chunk: chunk) { bytes throws(InflateError) in try reference.feed(bytes) } finish: { () throws(InflateError) in try reference.finish() }
        let daemon = BodyInflater(coding: coding, maxOutput: maxOutput)
        let got = run(body, chunk: chunk) { bytes throws(InflateError) in try daemon.feed(bytes) } finish: { () throws(InflateError) in try daemon.finish() }
        if expected != got {
            return (try? got.get(), "BodyInflater (\(daemon.inflatedWhole ? "libdeflate" : "zlib")) gave \(describe(got)), zlib \(describe(expected))")
        }
        // What the daemon runs: the body held whole, inflated at once, against zlib fed it at once
        // (zlib's error for a bad body can depend on where the chunks end).
        let once = StreamingInflater(coding: coding, maxOutput: maxOutput)
        let expectedWhole = run(body, chunk: max(body.count, 1)) { bytes throws(InflateError) in try once.feed(bytes) } finish: { () throws(InflateError) in try once.finish() }
        let whole: Result<[UInt8], InflateError>
        do throws(InflateError) { whole = .success(try BodyInflater.inflate(Array(body), coding: coding, maxOutput: maxOutput)) }
        catch { whole = .failure(error) }
        let json = try? whole.get()
        if expectedWhole != whole {
            return (json, "BodyInflater.inflate gave \(describe(whole)), zlib on the whole body \(describe(expectedWhole))")
        }
        // The one-call path on every input read as gzip, whatever the harness's coding byte said.
        if let whole = WholeMemberInflater.inflate(Array(body), maxOutput: maxOutput) {
            let zlib = StreamingInflater(coding: .gzip, maxOutput: maxOutput)
            let strict = run(body, chunk: max(body.count, 1)) { bytes throws(InflateError) in try zlib.feed(bytes) } finish: { () throws(InflateError) in try zlib.finish() }
            if strict != .success(whole) {
                return (json, "WholeMemberInflater accepted \(whole.count) bytes, zlib gave \(describe(strict))")
            }
        }
        return (json, nil)
    }

    static func run(
        _ body: ArraySlice<UInt8>, chunk: Int,
        feed: (ArraySlice<UInt8>) throws(InflateError) -> Void, finish: () throws(InflateError) -> [UInt8]
    ) -> Result<[UInt8], InflateError> {
        var offset = body.startIndex
        do throws(InflateError) {
            while offset < body.endIndex {
                let end = min(body.endIndex, offset + chunk)
                try feed(body[offset..<end])
                offset = end
            }
            return .success(try finish())
        } catch {
            return .failure(error)
        }
    }

    static func describe(_ result: Result<[UInt8], InflateError>) -> String {
        switch result {
        case .success(let bytes): "\(bytes.count) bytes (\(bytes.prefix(40)))"
        case .failure(let error): "\"\(error)\""
        }
    }
}
