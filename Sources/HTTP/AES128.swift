/// The AES-128 block cipher, encryption only (FIPS 197): QUIC's Initial
/// packets use it in GCM for their payload and alone, on one block, for
/// header protection (RFC 9001 §5.4.3). Decrypting GCM needs only the
/// forward cipher. Table-free apart from the S-box, and not constant-time:
/// the keys it sees are derived from a connection ID on the wire, public by
/// design (RFC 9001 §5.2), so there is no secret to leak.
package struct AES128 {
    package static let blockSize = 16
    /// 11 round keys of 16 bytes.
    private let roundKeys: [UInt8]

    /// Nil unless `key` holds 16 bytes.
    package init?(key: [UInt8]) {
        guard key.count == 16 else { return nil }
        // §5.2 KeyExpansion, in bytes: each 4-byte word is the one 16 bytes
        // back, xored with the previous word (rotated, substituted and
        // xored with the round constant at the start of each round key).
        var expanded = key
        expanded.reserveCapacity(176)
        var roundConstant: UInt8 = 1
        for i in stride(from: 16, to: 176, by: 4) {
            var word = Array(expanded[i - 4 ..< i])
            if i % 16 == 0 {
                word = [Self.sbox[Int(word[1])] ^ roundConstant, Self.sbox[Int(word[2])], Self.sbox[Int(word[3])], Self.sbox[Int(word[0])]]
                roundConstant = Self.double(roundConstant)
            }
            for j in 0 ..< 4 { expanded.append(expanded[i - 16 + j] ^ word[j]) }
        }
        roundKeys = expanded
    }

    /// One 16-byte block (fewer or more bytes: the first 16, zero-padded).
    package func encryptBlock(_ block: [UInt8]) -> [UInt8] {
        var state = [UInt8](repeating: 0, count: 16)
        for i in 0 ..< min(16, block.count) { state[i] = block[i] ^ roundKeys[i] }
        var shifted = state
        for round in 1 ... 10 {
            // SubBytes and ShiftRows together: byte (row r, column c) comes
            // from column c + r. The state is column-major: index = r + 4c.
            for c in 0 ..< 4 {
                for r in 0 ..< 4 { shifted[r + 4 * c] = Self.sbox[Int(state[r + 4 * ((c + r) % 4)])] }
            }
            if round < 10 {
                // MixColumns (§5.1.3).
                for c in 0 ..< 4 {
                    let a0 = shifted[4 * c], a1 = shifted[4 * c + 1], a2 = shifted[4 * c + 2], a3 = shifted[4 * c + 3]
                    state[4 * c] = Self.double(a0) ^ Self.double(a1) ^ a1 ^ a2 ^ a3
                    state[4 * c + 1] = a0 ^ Self.double(a1) ^ Self.double(a2) ^ a2 ^ a3
                    state[4 * c + 2] = a0 ^ a1 ^ Self.double(a2) ^ Self.double(a3) ^ a3
                    state[4 * c + 3] = Self.double(a0) ^ a0 ^ a1 ^ a2 ^ Self.double(a3)
                }
            } else {
                state = shifted
            }
            for i in 0 ..< 16 { state[i] ^= roundKeys[16 * round + i] }
        }
        return state
    }

    /// Multiplication by x in GF(2^8) modulo x^8 + x^4 + x^3 + x + 1.
    private static func double(_ b: UInt8) -> UInt8 { b << 1 ^ (b & 0x80 != 0 ? 0x1b : 0) }

    /// §5.1.1: the multiplicative inverse in GF(2^8), then the affine map.
    /// Built by walking the field's elements as powers of 3 (a generator):
    /// p runs through 3^k and q through 3^-k, so q is p's inverse.
    private static let sbox: [UInt8] = {
        var table = [UInt8](repeating: 0, count: 256)
        var p: UInt8 = 1, q: UInt8 = 1
        func rotateLeft(_ x: UInt8, _ n: UInt8) -> UInt8 { x << n | x >> (8 - n) }
        repeat {
            p = p ^ double(p)
            q ^= q << 1
            q ^= q << 2
            q ^= q << 4
            if q & 0x80 != 0 { q ^= 0x09 }
            table[Int(p)] = q ^ rotateLeft(q, 1) ^ rotateLeft(q, 2) ^ rotateLeft(q, 3) ^ rotateLeft(q, 4) ^ 0x63
        } while p != 1
        table[0] = 0x63
        return table
    }()
}
