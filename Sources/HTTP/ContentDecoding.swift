/// Undoes the content codings Sluice can read (RFC 9110 §8.4.1): gzip
/// (RFC 1952, also named x-gzip), deflate (RFC 1950's zlib stream; RFC
/// 9110 §8.4.1.2 notes that some senders put a raw RFC 1951 stream there
/// instead, which is read too), br (RFC 7932, `BrotliDecoder`) and zstd
/// (RFC 8878, `ZstdDecoder`), the four that curl and browsers offer. HAR
/// shows a body as the app read it, and [Body Rewrite] changes text, not
/// its compression: both decode first.
///
/// Bounded: at most `limit` decoded bytes, past which it throws (a
/// decompression bomb is refused, not followed), and every check a format
/// carries (gzip's CRC-32 and length, zlib's Adler-32, zstd's XXH64 and
/// content size) must hold.
public enum ContentDecoding {
    public enum Coding: String, Sendable, Equatable {
        case gzip
        case deflate
        case brotli = "br"
        case zstd
    }

    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
    }

    /// The codings `headers`' Content-Encoding lists, in the order they were
    /// applied (identity left out): [] for a plain body, nil when one of them
    /// is a coding Sluice cannot undo (compress, or unknown).
    public static func codings(of headers: HTTPHeaders) -> [Coding]? {
        var codings: [Coding] = []
        for value in headers.values("Content-Encoding") {
            for item in value.split(separator: ",") {
                let name = item.filter { $0 != " " && $0 != "\t" }.lowercased()
                switch name {
                case "identity", "": continue
                case "gzip", "x-gzip": codings.append(.gzip)
                case "deflate": codings.append(.deflate)
                case "br": codings.append(.brotli)
                case "zstd": codings.append(.zstd)
                default: return nil
                }
            }
        }
        return codings
    }

    /// `body` with `codings` undone, the last applied first; throws on data
    /// that is not what a coding says, or past `limit` decoded bytes.
    ///
    /// An empty body is empty whatever its Content-Encoding says: servers
    /// label an empty 200 `Content-Encoding: gzip` with `Content-Length: 0`
    /// (no gzip member, not even the 20 bytes of an empty one), and curl and
    /// browsers read it as no content, not as damaged data.
    public static func decode(_ body: [UInt8], codings: [Coding], limit: Int) throws(Failure) -> [UInt8] {
        guard !body.isEmpty else { return [] }
        var data = body
        for coding in codings.reversed() {
            let decoded = data.withUnsafeBytes { raw in
                Result { () throws(Failure) in
                    switch coding {
                    case .gzip: try gunzip(raw, limit: limit)
                    case .deflate: try inflateZlib(raw, limit: limit)
                    case .brotli: try unbrotli(raw, limit: limit)
                    case .zstd: try unzstd(raw, limit: limit)
                    }
                }
            }
            data = try decoded.get()
        }
        return data
    }

    // MARK: - gzip (RFC 1952)

    /// RFC 1952 §2.3: one member or more, each a header, a DEFLATE stream, and
    /// the data's CRC-32 and length (mod 2^32), little-endian.
    static func gunzip(_ input: UnsafeRawBufferPointer, limit: Int) throws(Failure) -> [UInt8] {
        var output: [UInt8] = []
        var at = 0
        // Each member takes at least its 18 bytes of header and trailer.
        for member in 0 ..< input.count / 18 + 1 {
            if at == input.count, member > 0 { return output }
            let start = output.count
            at = try skipGzipHeader(input, from: at)
            let stream = try inflate(UnsafeRawBufferPointer(rebasing: input[at...]), windowBits: 15, limit: limit - output.count, into: &output)
            at += stream
            guard input.count - at >= 8 else { throw Failure(reason: "gzip: truncated trailer") }
            let crc = littleEndian32(input, at), size = littleEndian32(input, at + 4)
            at += 8
            let produced = output[start...]
            guard CRC32.checksum(produced) == crc else { throw Failure(reason: "gzip: CRC-32 mismatch") }
            guard UInt32(truncatingIfNeeded: produced.count) == size else { throw Failure(reason: "gzip: length mismatch (ISIZE \(size), data \(produced.count))") }
        }
        throw Failure(reason: "gzip: trailing bytes")
    }

    /// RFC 1952 §2.3.1: ID1 ID2 CM FLG MTIME(4) XFL OS, then FEXTRA, FNAME,
    /// FCOMMENT and FHCRC as FLG says. Returns where the DEFLATE stream starts.
    private static func skipGzipHeader(_ input: UnsafeRawBufferPointer, from start: Int) throws(Failure) -> Int {
        guard input.count - start >= 10 else { throw Failure(reason: "gzip: truncated header") }
        guard input[start] == 0x1F, input[start + 1] == 0x8B else {
            throw Failure(reason: start == 0 ? "gzip: not gzip data (no 1f 8b)" : "gzip: trailing bytes")
        }
        guard input[start + 2] == 8 else { throw Failure(reason: "gzip: compression method \(input[start + 2]), not deflate") }
        let flags = input[start + 3]
        guard flags & 0xE0 == 0 else { throw Failure(reason: "gzip: reserved flag bits set") }
        var at = start + 10
        if flags & 0x04 != 0 {
            guard input.count - at >= 2 else { throw Failure(reason: "gzip: truncated header") }
            let length = Int(input[at]) | Int(input[at + 1]) << 8
            guard input.count - at - 2 >= length else { throw Failure(reason: "gzip: truncated header") }
            at += 2 + length
        }
        for flag: UInt8 in [0x08, 0x10] where flags & flag != 0 {
            // FNAME, FCOMMENT: zero-terminated.
            guard let zero = input[at...].firstIndex(of: 0) else { throw Failure(reason: "gzip: truncated header") }
            at = zero + 1
        }
        if flags & 0x02 != 0 {
            guard input.count - at >= 2 else { throw Failure(reason: "gzip: truncated header") }
            let expected = UInt32(input[at]) | UInt32(input[at + 1]) << 8
            guard CRC32.checksum(input[start ..< at]) & 0xFFFF == expected else { throw Failure(reason: "gzip: header CRC mismatch") }
            at += 2
        }
        return at
    }

    // MARK: - deflate (RFC 1950)

    /// RFC 1950 §2.2: CMF FLG, the DEFLATE stream, the data's Adler-32
    /// (big-endian). Input whose first two bytes are no zlib header is read
    /// as a raw DEFLATE stream.
    static func inflateZlib(_ input: UnsafeRawBufferPointer, limit: Int) throws(Failure) -> [UInt8] {
        var output: [UInt8] = []
        guard input.count >= 2, input[0] & 0x0F == 8, input[0] >> 4 <= 7,
              (UInt16(input[0]) << 8 | UInt16(input[1])) % 31 == 0 else {
            let consumed = try inflate(input, windowBits: 15, limit: limit, into: &output)
            guard consumed == input.count else { throw Failure(reason: "deflate: trailing bytes") }
            return output
        }
        guard input[1] & 0x20 == 0 else { throw Failure(reason: "deflate: a preset dictionary (FDICT) is needed") }
        let consumed = try inflate(UnsafeRawBufferPointer(rebasing: input[2...]), windowBits: Int(input[0] >> 4) + 8,
                                   limit: limit, into: &output)
        let at = 2 + consumed
        guard input.count - at == 4 else {
            throw Failure(reason: input.count - at < 4 ? "deflate: truncated Adler-32" : "deflate: trailing bytes")
        }
        let expected = UInt32(input[at]) << 24 | UInt32(input[at + 1]) << 16 | UInt32(input[at + 2]) << 8 | UInt32(input[at + 3])
        guard Adler32.checksum(output) == expected else { throw Failure(reason: "deflate: Adler-32 mismatch") }
        return output
    }

    /// One DEFLATE stream to its final block, appended to `output`; returns the bytes it took.
    private static func inflate(_ input: UnsafeRawBufferPointer, windowBits: Int, limit: Int,
                                into output: inout [UInt8]) throws(Failure) -> Int {
        var inflater = Inflater(windowBits: windowBits, outputMaximum: max(limit, 0))
        do {
            return try inflater.inflateStream(input, limit: .max, into: &output).consumed
        } catch {
            throw Failure(reason: error.reason.hasPrefix("output too large") ? "decoded body larger than \(limit) bytes" : "DEFLATE: \(error.reason)")
        }
    }

    // MARK: - br (RFC 7932) and zstd (RFC 8878)

    static func unbrotli(_ input: UnsafeRawBufferPointer, limit: Int) throws(Failure) -> [UInt8] {
        do {
            return try BrotliDecoder.decode(input, limit: max(limit, 0))
        } catch {
            throw Failure(reason: error.exceededLimit ? "decoded body larger than \(limit) bytes" : error.reason)
        }
    }

    static func unzstd(_ input: UnsafeRawBufferPointer, limit: Int) throws(Failure) -> [UInt8] {
        do {
            return try ZstdDecoder.decode(input, limit: max(limit, 0))
        } catch {
            throw Failure(reason: error.exceededLimit ? "decoded body larger than \(limit) bytes" : error.reason)
        }
    }

    private static func littleEndian32(_ input: UnsafeRawBufferPointer, _ at: Int) -> UInt32 {
        UInt32(input[at]) | UInt32(input[at + 1]) << 8 | UInt32(input[at + 2]) << 16 | UInt32(input[at + 3]) << 24
    }
}
