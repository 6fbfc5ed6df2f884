import Testing
import TestSupport
@testable import HTTP

/// The bit reader DEFLATE and Brotli share, against the plainest reading of
/// RFC 1951 §3.1.1: bit `i` of the stream is bit `i % 8` of byte `i / 8`.
struct LSBBitReaderTests {
    typealias Reader = LSBBitReader<Inflater.Failure>

    /// Bits `start ..< start + n` of `bytes` as a number, the first bit lowest.
    static func reference(_ bytes: [UInt8], _ start: Int, _ n: Int) -> Int {
        var value = 0
        for i in 0 ..< n {
            let bit = start + i
            value |= Int(bytes[bit / 8] >> UInt8(bit % 8) & 1) << i
        }
        return value
    }

    /// Random widths (0...32) taken, peeked and dropped over inputs of every
    /// length up to 40 bytes (so both the word-at-a-time refill and the
    /// byte-at-a-time one near the end run), each read checked against the
    /// reference, and the read that would pass the end throws.
    @Test func readsWhatTheReferenceReads() {
        var random = SeededRandom(seed: 0x51_0CE)
        for length in 0 ... 40 {
            for _ in 0 ..< 20 {
                let bytes = (0 ..< length).map { _ in UInt8.random(in: 0 ... 255, using: &random) }
                let total = length * 8
                bytes.withUnsafeBytes { raw in
                    var reader = Reader(input: raw)
                    var at = 0
                    for _ in 0 ..< 200 {
                        let n = Int.random(in: 0 ... 32, using: &random)
                        let viaPeek = Bool.random(using: &random) && n <= 15
                        if at + n > total {
                            #expect(throws: Inflater.Failure.truncated) {
                                if viaPeek { _ = reader.peek(); try reader.drop(n) } else { _ = try reader.take(n) }
                            }
                            // Nothing was taken: what is left still reads.
                            #expect(reader.bitsRead == at)
                            let rest = total - at
                            let last = try? reader.take(rest)
                            #expect(last == Self.reference(bytes, at, rest))
                            #expect(reader.isExhausted)
                            return
                        }
                        let value: Int?
                        if viaPeek {
                            let peeked = Int(truncatingIfNeeded: reader.peek() & ((1 << UInt64(n)) - 1))
                            value = (try? reader.drop(n)) != nil ? peeked : nil
                        } else {
                            value = try? reader.take(n)
                        }
                        #expect(value == Self.reference(bytes, at, n), "\(n) bits at bit \(at) of \(length) bytes")
                        at += n
                        #expect(reader.bitsRead == at)
                    }
                }
            }
        }
    }

    /// Stored data (DEFLATE's stored blocks, Brotli's uncompressed meta-blocks):
    /// after `alignToByte` (which returns the padding it skipped), whole bytes
    /// come from the input itself, the bytes held ahead given back first.
    @Test func bytesAfterAlignmentComeFromTheInput() throws {
        let bytes: [UInt8] = [0b1010_0101] + Array(1 ... 20)
        try bytes.withUnsafeBytes { raw in
            var reader = Reader(input: raw)
            let first = try reader.take(3)
            #expect(first == 0b101)
            let padding = reader.alignToByte()
            #expect(padding == 0b10100)
            #expect(reader.consumedBytes == 1)
            let four = Array(try reader.takeBytes(4))
            #expect(four == [1, 2, 3, 4])
            let fifth = try reader.take(8)
            #expect(fifth == 5)
            let none = reader.alignToByte()
            #expect(none == 0)
            let rest = Array(reader.remainingBytes())
            #expect(rest == Array(6 ... 20))
            #expect(!reader.isExhausted)
            #expect(throws: Inflater.Failure.truncated) { _ = try reader.takeBytes(16) }
            let last = Array(try reader.takeBytes(15))
            #expect(last == Array(6 ... 20))
            #expect(reader.isExhausted)
            #expect(reader.consumedBytes == bytes.count)
        }
    }

    /// Each decoder names its own truncation.
    @Test func eachDecoderSaysTruncatedInItsOwnWords() {
        #expect(Inflater.Failure.truncated.description == "DEFLATE: truncated input")
        #expect(BrotliDecoder.Failure.truncated.reason == "brotli: truncated stream")
        let empty: [UInt8] = []
        empty.withUnsafeBytes { raw in
            var reader = LSBBitReader<BrotliDecoder.Failure>(input: raw)
            #expect(throws: BrotliDecoder.Failure.truncated) { _ = try reader.take(1) }
            let nothing = try? reader.take(0)
            #expect(nothing == 0)
        }
    }
}
