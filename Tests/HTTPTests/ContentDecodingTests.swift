import Testing
@testable import HTTP
import TestSupport

private func hex(_ text: String) -> [UInt8] { QUICFixtures.hex(text) }

private func decode(_ body: [UInt8], _ codings: [ContentDecoding.Coding], limit: Int = 1 << 20) throws(ContentDecoding.Failure) -> [UInt8] {
    try ContentDecoding.decode(body, codings: codings, limit: limit)
}

/// The vectors were made with Python's gzip and zlib modules
/// (`gzip.compress(text, mtime=0)`, `zlib.compress(text)`, a raw
/// `zlib.compressobj(9, zlib.DEFLATED, -15)`), and one gzip header built by
/// hand with every optional field (FEXTRA "AB\0\1", FNAME "body.json",
/// FCOMMENT "a comment", FHCRC).
private enum Vectors {
    static let text = Array(("{\"ad_enabled\":true,\"items\":[\"" + String(repeating: "hello world ", count: 40) + "\"]}").utf8)
    static let plain = hex(
        "1f8b0800000000000203ab564a4c894fcd4b4cca494d51b22a292a4dd551ca2c49cd2d56b28a56ca48cdc9c95728cf2f" +
        "ca495118650f3fb6526c2d0031581eaf00020000")
    static let full = hex(
        "1f8b081e000000000003040041420001626f64792e6a736f6e006120636f6d6d656e7400423fab564a4c894fcd4b4cca" +
        "494d51b22a292a4dd551ca2c49cd2d56b28a56ca48cdc9c95728cf2fca495118650f3fb6526c2d0031581eaf00020000")
    static let zlib = hex(
        "789cab564a4c894fcd4b4cca494d51b22a292a4dd551ca2c49cd2d56b28a56ca48cdc9c95728cf2fca495118650f3fb6" +
        "526c2d003f72be4e")
    static let raw = hex(
        "ab564a4c894fcd4b4cca494d51b22a292a4dd551ca2c49cd2d56b28a56ca48cdc9c95728cf2fca495118650f3fb6526c" +
        "2d00")
    static let member2 = hex(
        "1f8b08000000000002032b4e4dcecf4b51c84dcd4d4a2de2020036184b0e0e000000")
    static let stored = hex(
        "1f8b0800000000000403010002fffd7b2261645f656e61626c6564223a747275652c226974656d73223a5b2268656c6c" +
        "6f20776f726c642068656c6c6f20776f726c642068656c6c6f20776f726c642068656c6c6f20776f726c642068656c6c" +
        "6f20776f726c642068656c6c6f20776f726c642068656c6c6f20776f726c642068656c6c6f20776f726c642068656c6c" +
        "6f20776f726c642068656c6c6f20776f726c642068656c6c6f20776f726c642068656c6c6f20776f726c642068656c6c" +
        "6f20776f726c642068656c6c6f20776f726c642068656c6c6f20776f726c642068656c6c6f20776f726c642068656c6c" +
        "6f20776f726c642068656c6c6f20776f726c642068656c6c6f20776f726c642068656c6c6f20776f726c642068656c6c" +
        "6f20776f726c642068656c6c6f20776f726c642068656c6c6f20776f726c642068656c6c6f20776f726c642068656c6c" +
        "6f20776f726c642068656c6c6f20776f726c642068656c6c6f20776f726c642068656c6c6f20776f726c642068656c6c" +
        "6f20776f726c642068656c6c6f20776f726c642068656c6c6f20776f726c642068656c6c6f20776f726c642068656c6c" +
        "6f20776f726c642068656c6c6f20776f726c642068656c6c6f20776f726c642068656c6c6f20776f726c642068656c6c" +
        "6f20776f726c642068656c6c6f20776f726c642068656c6c6f20776f726c642068656c6c6f20776f726c6420225d7d31" +
        "581eaf00020000")
}

@Suite struct ContentDecodingTests {
    @Test func gzipMembersDecode() throws {
        #expect(try decode(Vectors.plain, [.gzip]) == Vectors.text)
        // Every optional header field, the header's own CRC checked.
        #expect(try decode(Vectors.full, [.gzip]) == Vectors.text)
        // Level 0: stored blocks.
        #expect(try decode(Vectors.stored, [.gzip]) == Vectors.text)
        // RFC 1952 §2.2: members one after another decode as their data's concatenation.
        #expect(try decode(Vectors.plain + Vectors.member2, [.gzip]) == Vectors.text + Array("second member\n".utf8))
    }

    /// HTTP's deflate is a zlib stream; a raw DEFLATE stream (RFC 9110 §8.4.1.2's non-conformant senders) is read too.
    @Test func deflateIsZlibOrRaw() throws {
        #expect(try decode(Vectors.zlib, [.deflate]) == Vectors.text)
        #expect(try decode(Vectors.raw, [.deflate]) == Vectors.text)
        #expect(try decode([], []) == [])
    }

    /// An empty body with a Content-Encoding (an empty 200 labelled gzip) is
    /// no content, not a truncated stream; one byte is a truncated stream.
    @Test func anEmptyBodyIsEmptyWhateverItsCoding() throws {
        for coding in [ContentDecoding.Coding.gzip, .deflate, .brotli, .zstd] {
            #expect(try decode([], [coding]) == [])
            #expect(try decode([], [coding, .gzip]) == [])
            #expect(throws: ContentDecoding.Failure.self) { try decode([0x1F], [coding]) }
        }
    }

    /// br and zstd go through `BrotliDecoder` and `ZstdDecoder` (their own
    /// suites test the formats): stacked with gzip in the order applied, and
    /// bounded by the same limit, refused in the same words. The vectors are
    /// `brotli -c`, `zstd -c` and `brotli -c | gzip -n` of "sluice " × 200.
    @Test func brotliAndZstdDecodeWithinTheLimit() throws {
        let text = Array(String(repeating: "sluice ", count: 200).utf8)
        let brotli = hex("b1b82bc06fa474f3a67519db5c9d04194b0bdb22812be507")
        let zstd = hex("28b52ffd64780475000038736c756963652001006ee92f4612cfdac0")
        let brotliThenGzip = hex("1f8b0800000000000003dbb843fb40fe9292cfcb4a256fc7cc6591f4e6beadd4a8fd941d00132d0f8118000000")
        #expect(try decode(brotli, [.brotli]) == text)
        #expect(try decode(zstd, [.zstd]) == text)
        #expect(try decode(brotliThenGzip, [.brotli, .gzip]) == text)
        for (body, coding) in [(brotli, ContentDecoding.Coding.brotli), (zstd, .zstd)] {
            #expect(throws: ContentDecoding.Failure(reason: "decoded body larger than 1399 bytes")) { try decode(body, [coding], limit: 1399) }
            #expect(try decode(body, [coding], limit: 1400) == text)
        }
        #expect(throws: ContentDecoding.Failure.self) { try decode(zstd, [.brotli]) }
        #expect(throws: ContentDecoding.Failure.self) { try decode(brotli, [.zstd]) }
    }

    @Test func codingsFromContentEncoding() {
        func codings(_ values: String...) -> [ContentDecoding.Coding]? {
            var headers = HTTPHeaders()
            for value in values { headers.add(name: "Content-Encoding", value: value) }
            return ContentDecoding.codings(of: headers)
        }
        #expect(codings() == [])
        #expect(codings("identity") == [])
        #expect(codings("GZIP") == [.gzip])
        #expect(codings("x-gzip") == [.gzip])
        #expect(codings("deflate, gzip") == [.deflate, .gzip])
        #expect(codings("deflate", " gzip ") == [.deflate, .gzip])
        #expect(codings("br") == [.brotli])
        #expect(codings("gzip, ZSTD") == [.gzip, .zstd])
        #expect(codings("compress") == nil)
        #expect(codings("br, x-compress") == nil)
    }

    @Test func checksWhatTheWrapperCarries() {
        func failure(_ body: [UInt8], _ codings: [ContentDecoding.Coding], limit: Int = 1 << 20) -> String? {
            do { _ = try decode(body, codings, limit: limit); return nil } catch { return error.reason }
        }
        var badCRC = Vectors.plain
        badCRC[badCRC.count - 8] ^= 1
        #expect(failure(badCRC, [.gzip]) == "gzip: CRC-32 mismatch")
        var badLength = Vectors.plain
        badLength[badLength.count - 1] ^= 1
        #expect(failure(badLength, [.gzip])?.hasPrefix("gzip: length mismatch") == true)
        var badHeaderCRC = Vectors.full
        badHeaderCRC[13] ^= 1  // inside FEXTRA
        #expect(failure(badHeaderCRC, [.gzip]) == "gzip: header CRC mismatch")
        #expect(failure(Vectors.plain + [0x00], [.gzip]) == "gzip: truncated header")
        #expect(failure(Vectors.plain + Array(repeating: 0x41, count: 20), [.gzip]) == "gzip: trailing bytes")
        #expect(failure(Vectors.zlib, [.gzip]) == "gzip: not gzip data (no 1f 8b)")
        var badAdler = Vectors.zlib
        badAdler[badAdler.count - 1] ^= 1
        #expect(failure(badAdler, [.deflate]) == "deflate: Adler-32 mismatch")
        #expect(failure(Vectors.zlib + [0], [.deflate]) == "deflate: trailing bytes")
        // FDICT set (0x78 0xBB passes the header check): no dictionary to read it with.
        #expect(failure([0x78, 0xBB, 0, 0, 0, 0, 0, 0], [.deflate]) == "deflate: a preset dictionary (FDICT) is needed")
    }

    /// A body decodes to at most `limit` bytes: past it, it is refused, not followed.
    @Test func decodedLengthIsBounded() throws {
        #expect(try decode(Vectors.plain, [.gzip], limit: Vectors.text.count) == Vectors.text)
        #expect(throws: ContentDecoding.Failure(reason: "decoded body larger than \(Vectors.text.count - 1) bytes")) {
            try decode(Vectors.plain, [.gzip], limit: Vectors.text.count - 1)
        }
        #expect(throws: ContentDecoding.Failure(reason: "decoded body larger than 100 bytes")) {
            try decode(Vectors.zlib, [.deflate], limit: 100)
        }
    }

    /// Every truncation throws, and no single flipped bit decodes to other
    /// bytes: the CRC-32 and length catch what DEFLATE does not.
    @Test func damagedInputThrowsOrDecodesRight() {
        for wrapped in [(Vectors.plain, ContentDecoding.Coding.gzip), (Vectors.full, .gzip), (Vectors.zlib, .deflate)] {
            // From one byte: no bytes at all is an empty body (`anEmptyBodyIsEmptyWhateverItsCoding`).
            for length in 1 ..< wrapped.0.count {
                #expect(throws: ContentDecoding.Failure.self) { try decode(Array(wrapped.0[..<length]), [wrapped.1]) }
            }
            var wrongOutputs = 0
            for bit in 0 ..< wrapped.0.count * 8 {
                var damaged = wrapped.0
                damaged[bit / 8] ^= 1 << UInt8(bit % 8)
                if let decoded = try? decode(damaged, [wrapped.1]), decoded != Vectors.text { wrongOutputs += 1 }
            }
            #expect(wrongOutputs == 0)
        }
    }
}
