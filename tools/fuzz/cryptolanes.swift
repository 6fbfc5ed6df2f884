// fuzz-sources: Sources/CryptoAVX2 Sources/Crypto
// fuzz-corpus: cryptolanes
// libFuzzer harness for CryptoAVX2's wide paths against Crypto's baseline
// ones: ChaCha20 eight blocks at a time against four, and Poly1305 in four
// lanes of 26-bit limbs against 64-bit limbs, for any key, nonce, counter,
// accumulator (a prefix absorbed first) and message. Built here as one
// module without -target-cpu, so the wide paths run as SSE2 code: this
// checks their arithmetic over any input (the unit tests check the AVX2
// build itself). A carry that leaves a limb exactly at its bound is too
// rare for random inputs to meet (about one in 2^26: 2.4 million runs
// without the carry that handles it found nothing), so
// Poly1305FourLaneTests builds that case.
//
// Input: 32 bytes of key, 12 of nonce, 4 of counter, 1 of prefix length
// (mod 64), the prefix, then the message.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCryptoLanes(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard bytes.count >= 49 else { return 0 }
    let key = Array(bytes[0 ..< 32]), nonce = Array(bytes[32 ..< 44])
    let counter = bytes[44 ..< 48].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    let prefixLength = min(Int(bytes[48]) % 64, bytes.count - 49)
    let prefix = Array(bytes[49 ..< 49 + prefixLength])
    let message = Array(bytes[(49 + prefixLength)...])

    // ChaCha20: only as many blocks as the counter has left (the caller's check).
    if let cipher = ChaCha20(key: key, nonce: nonce), ChaCha20.canProcess(byteCount: message.count, initialCounter: counter) {
        var four = message, eight = message
        four.withUnsafeMutableBytes { cipher.xorKeyStream($0, initialCounter: counter, eightLanes: false) }
        eight.withUnsafeMutableBytes { buffer in
            let done = chaCha20XorEightBlockRuns(buffer.baseAddress!, byteCount: buffer.count,
                                                 key: (cipher.key0, cipher.key1, cipher.key2, cipher.key3,
                                                       cipher.key4, cipher.key5, cipher.key6, cipher.key7),
                                                 nonce: (cipher.nonce0, cipher.nonce1, cipher.nonce2), counter: counter)
            precondition(done % 512 == 0 && done <= buffer.count && buffer.count - done < 512, "eight blocks took \(done) of \(buffer.count)")
            let rest = UnsafeMutableRawBufferPointer(rebasing: buffer[done...])
            cipher.xorKeyStream(rest, initialCounter: counter &+ UInt32(truncatingIfNeeded: done / 64), eightLanes: false)
        }
        precondition(four == eight, "ChaCha20's eight-block path differs")
    }

    // Poly1305, after the prefix (the accumulator the lanes start from).
    if var scalar = Poly1305(key: key) {
        prefix.withUnsafeBytes { scalar.absorbZeroPadded($0, fourLanes: false) }
        var lanes = scalar
        message.withUnsafeBytes { scalar.absorbZeroPadded($0, fourLanes: false) }
        message.withUnsafeBytes { buffer in
            var done = 0
            if let base = buffer.baseAddress {
                done = poly1305AbsorbFourLaneRuns(&lanes.accumulatorWords, r: lanes.clampedR, base, byteCount: buffer.count)
                precondition(lanes.accumulatorWords.2 <= 4, "the lanes left the top limb at \(lanes.accumulatorWords.2)")
            }
            lanes.absorbZeroPadded(UnsafeRawBufferPointer(rebasing: buffer[done...]), fourLanes: false)
        }
        precondition(scalar.tagWords() == lanes.tagWords(), "Poly1305's four-lane path differs")
    }
    return 0
}
