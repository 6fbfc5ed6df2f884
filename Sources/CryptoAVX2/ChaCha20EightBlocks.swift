// This module alone is compiled for Haswell-class x86-64 (AVX2, in
// Package.swift), and nothing in it may run unless the CPU has AVX2: Crypto
// calls it only when `CryptoAcceleration.avx2` says so, which the engine sets
// from the kernel's CPU flags (Sys's `CPUFeatures`). Its interface takes
// and returns scalars and pointers only: a SIMD argument would be passed
// in YMM registers on this side and not on the caller's, compiled for
// baseline x86-64. For the same reason the quarter round is written here
// again rather than shared with Crypto's: a shared generic compiled here
// could be what Crypto's baseline paths run.
#if arch(x86_64)

/// ChaCha20 (RFC 8439 §2.3, unchanged) eight blocks at once: word i of
/// blocks counter ... counter + 7 share one `SIMD8<UInt32>`, which AVX2
/// holds in one YMM register, so each quarter round does eight blocks'
/// work, twice the four of Crypto's SSE2 path; the rotations by 16 and 8
/// compile to byte shuffles (`vpshufb`). Only 32-bit additions, XORs and
/// fixed rotations: constant time as the scalar block (§4).
///
/// XORs the keystream into `byteCount` bytes at `base`, 512 at a time, from
/// block `counter` on (wrapping: the caller made sure the counter does not
/// pass 2^32 - 1), and returns how many bytes it did: `byteCount` rounded
/// down to a multiple of 512. `key` and `nonce` are §2.3's words 4-11 and
/// 13-15.
@inline(never)
public func chaCha20XorEightBlockRuns(
    _ base: UnsafeMutableRawPointer, byteCount: Int,
    key: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32),
    nonce: (UInt32, UInt32, UInt32), counter: UInt32
) -> Int {
    var offset = 0
    var counter = counter
    while byteCount - offset >= eightBlockSize {
        xorEightBlocks(base + offset, key: key, nonce: nonce, counter: counter)
        counter &+= 8
        offset += eightBlockSize
    }
    return offset
}

private let eightBlockSize = 8 * 64

private typealias EightWords = (
    SIMD8<UInt32>, SIMD8<UInt32>, SIMD8<UInt32>, SIMD8<UInt32>,
    SIMD8<UInt32>, SIMD8<UInt32>, SIMD8<UInt32>, SIMD8<UInt32>,
    SIMD8<UInt32>, SIMD8<UInt32>, SIMD8<UInt32>, SIMD8<UInt32>,
    SIMD8<UInt32>, SIMD8<UInt32>, SIMD8<UInt32>, SIMD8<UInt32>
)

/// A lane-wise rotation. With AVX2 the `|` form is matched as a rotate and
/// lowered to `vpshufb` for 16 and 8, to two shifts and an OR otherwise.
@inline(__always)
private func rotateLeft(_ words: SIMD8<UInt32>, by count: UInt32) -> SIMD8<UInt32> {
    (words &<< count) | (words &>> (32 &- count))
}

/// §2.1's quarter round, lane-wise.
@inline(__always)
private func quarterRound(_ a: SIMD8<UInt32>, _ b: SIMD8<UInt32>, _ c: SIMD8<UInt32>, _ d: SIMD8<UInt32>)
    -> (SIMD8<UInt32>, SIMD8<UInt32>, SIMD8<UInt32>, SIMD8<UInt32>) {
    var (a, b, c, d) = (a, b, c, d)
    a &+= b; d ^= a; d = rotateLeft(d, by: 16)
    c &+= d; b ^= c; b = rotateLeft(b, by: 12)
    a &+= b; d ^= a; d = rotateLeft(d, by: 8)
    c &+= d; b ^= c; b = rotateLeft(b, by: 7)
    return (a, b, c, d)
}

/// The §2.3 block function for counters counter ... counter + 7, XORed
/// into the 512 bytes at `base`. The sixteen keystream vectors sit on the
/// stack; word i of block j is lane j of vector i.
@inline(__always)
private func xorEightBlocks(
    _ base: UnsafeMutableRawPointer,
    key: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32),
    nonce: (UInt32, UInt32, UInt32), counter: UInt32
) {
    let input: EightWords = (
        SIMD8(repeating: 0x6170_7865), SIMD8(repeating: 0x3320_646e), SIMD8(repeating: 0x7962_2d32), SIMD8(repeating: 0x6b20_6574),
        SIMD8(repeating: key.0), SIMD8(repeating: key.1), SIMD8(repeating: key.2), SIMD8(repeating: key.3),
        SIMD8(repeating: key.4), SIMD8(repeating: key.5), SIMD8(repeating: key.6), SIMD8(repeating: key.7),
        SIMD8(repeating: counter) &+ SIMD8(0, 1, 2, 3, 4, 5, 6, 7),
        SIMD8(repeating: nonce.0), SIMD8(repeating: nonce.1), SIMD8(repeating: nonce.2)
    )
    var (x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15) = input
    for _ in 0 ..< 10 {
        (x0, x4, x8, x12) = quarterRound(x0, x4, x8, x12)
        (x1, x5, x9, x13) = quarterRound(x1, x5, x9, x13)
        (x2, x6, x10, x14) = quarterRound(x2, x6, x10, x14)
        (x3, x7, x11, x15) = quarterRound(x3, x7, x11, x15)
        (x0, x5, x10, x15) = quarterRound(x0, x5, x10, x15)
        (x1, x6, x11, x12) = quarterRound(x1, x6, x11, x12)
        (x2, x7, x8, x13) = quarterRound(x2, x7, x8, x13)
        (x3, x4, x9, x14) = quarterRound(x3, x4, x9, x14)
    }
    var keyStream: EightWords = (
        x0 &+ input.0, x1 &+ input.1, x2 &+ input.2, x3 &+ input.3,
        x4 &+ input.4, x5 &+ input.5, x6 &+ input.6, x7 &+ input.7,
        x8 &+ input.8, x9 &+ input.9, x10 &+ input.10, x11 &+ input.11,
        x12 &+ input.12, x13 &+ input.13, x14 &+ input.14, x15 &+ input.15
    )
    withUnsafeBytes(of: &keyStream) { words in
        for block in 0 ..< 8 {
            let target = base + block * 64
            for word in 0 ..< 16 {
                let mask = words.load(fromByteOffset: word * 32 + block * 4, as: UInt32.self)
                let data = (target + word * 4).loadUnaligned(as: UInt32.self)
                // §2.3 serializes each word little-endian (x86-64 is little-endian).
                (target + word * 4).storeBytes(of: data ^ mask, as: UInt32.self)
            }
        }
    }
}

#endif
