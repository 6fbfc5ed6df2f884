import Sys
import TestSupport
@testable import Crypto
@testable import CryptoAVX2
import Testing

/// Poly1305 four blocks at a time (AVX2, the CryptoAVX2 module) against the
/// scalar path, whose RFC 8439 vectors Poly1305Tests checks: the tags must
/// be equal for every key, message and accumulator the scalar path meets.
/// Only where the CPU has AVX2 (elsewhere its instructions would trap).
@Suite(.enabled(if: CryptoAcceleration.usable(onCPUWithAVX2: CPUFeatures.current().avx2), "the CPU has no AVX2"))
struct Poly1305FourLaneTests {
    /// xorshift64: the same "random" cases on every run.
    struct Generator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return state
        }
        mutating func bytes(_ count: Int) -> [UInt8] { (0 ..< count).map { _ in UInt8(truncatingIfNeeded: next()) } }
    }

    /// The tag of `prefix` then `message`, each zero-padded, as ChaCha20-Poly1305 absorbs them.
    static func tag(key: (UInt64, UInt64, UInt64, UInt64), prefix: [UInt8], message: [UInt8], fourLanes: Bool) -> (low: UInt64, high: UInt64) {
        var authenticator = Poly1305(r0: key.0, r1: key.1, s0: key.2, s1: key.3)
        prefix.withUnsafeBytes { authenticator.absorbZeroPadded($0, fourLanes: false) }
        message.withUnsafeBytes { authenticator.absorbZeroPadded($0, fourLanes: fourLanes) }
        return authenticator.tagWords()
    }

    /// Lengths around the path's 256-byte minimum and its 64-byte chunks, a
    /// 16 KiB record, with and without an accumulator already running (AAD).
    @Test(arguments: [255, 256, 257, 300, 319, 320, 1000, 1024, 4133, 16384, 16401])
    func fourLanesGiveTheScalarTag(length: Int) {
        var random = Generator(state: 0x9E37_79B9_7F4A_7C15 ^ UInt64(length))
        for trial in 0 ..< 40 {
            let key = (random.next(), random.next(), random.next(), random.next())
            let prefix = random.bytes(trial % 3 == 0 ? 0 : Int(random.next() % 40))
            let message = random.bytes(length)
            let scalar = Self.tag(key: key, prefix: prefix, message: message, fourLanes: false)
            let lanes = Self.tag(key: key, prefix: prefix, message: message, fourLanes: true)
            #expect(lanes == scalar, "length \(length), trial \(trial)")
        }
    }

    /// Σ limb_i · 2^(26 i) in three 64-bit words, added bit position by bit position.
    static func reference(_ limbs: [UInt64]) -> (UInt64, UInt64, UInt64) {
        var words: [UInt64] = [0, 0, 0, 0]
        func add(_ value: UInt64, at index: Int) {
            var carry = value
            var i = index
            while carry != 0, i < words.count {
                let (sum, overflow) = words[i].addingReportingOverflow(carry)
                words[i] = sum
                carry = overflow ? 1 : 0
                i += 1
            }
        }
        for (i, limb) in limbs.enumerated() {
            let shift = 26 * i
            add(limb << UInt64(shift % 64), at: shift / 64)
            if shift % 64 != 0 { add(limb >> UInt64(64 - shift % 64), at: shift / 64 + 1) }
        }
        return (words[0], words[1], words[2])
    }

    /// Back to 64-bit words when a carry left a limb at or above 2^26 (its
    /// bits would overlap the next limb's): the sum, not the bits OR'ed.
    /// Rare from random messages (a carry into a limb just below 2^26), so
    /// built here.
    @Test func limbsAtTheirBoundGoBackToTheirSum() {
        let cases: [[UInt64]] = [
            [0, 1 << 26, 0, 0, 0],
            [0x3ff_ffff, (1 << 26) + 5, 0x3ff_ffff, 0x3ff_ffff, 3],
            [0x3ff_ffff, (1 << 26) + 0x3ff, 0x3ff_ffff, 0x3ff_ffff, 0x3ff_ffff],
            [1, 2, 3, 4, 5],
        ]
        for limbs in cases {
            let value = Limbs26(l0: limbs[0], l1: limbs[1], l2: limbs[2], l3: limbs[3], l4: limbs[4])
            let words = value.words()
            #expect(words == Self.reference(limbs), "\(limbs)")
            #expect(words.2 <= 4, "\(limbs): the scalar path's bound on its top limb")
            let back = Limbs26(words.0, words.1, words.2).words()
            #expect(back == words)
        }
    }

    /// The largest limbs: every byte 0xff, and the largest r clamping allows,
    /// where a carry the lanes left out would show.
    @Test func extremeMessagesAndKeys() {
        let keys: [(UInt64, UInt64, UInt64, UInt64)] = [(.max, .max, .max, .max), (0, 0, 0, 0), (.max, 0, 1, 2), (1, .max, 3, 4)]
        for key in keys {
            for message in [[UInt8](repeating: 0xff, count: 16384), [UInt8](repeating: 0, count: 4096), [UInt8](repeating: 0xff, count: 320)] {
                for prefix in [[], [UInt8](repeating: 0xff, count: 48)] {
                    #expect(Self.tag(key: key, prefix: prefix, message: message, fourLanes: true)
                        == Self.tag(key: key, prefix: prefix, message: message, fourLanes: false))
                }
            }
        }
    }
}
