import TestSupport
import Testing
@testable import Crypto

/// RSAPublicKey construction: the openssl-made keys load; every malformed
/// DER and every out-of-range modulus or exponent gives nil.
struct RSAPublicKeyTests {
    static let validKeys: [(name: String, der: String, bits: Int)] = [
        ("rsa1024", RSATestVectors.rsa1024PKCS1DER, 1024),
        ("rsa2048", RSATestVectors.rsa2048PKCS1DER, 2048),
        ("rsa2049", RSATestVectors.rsa2049PKCS1DER, 2049),
        ("rsa3072", RSATestVectors.rsa3072PKCS1DER, 3072),
        ("rsa4096", RSATestVectors.rsa4096PKCS1DER, 4096),
        ("rsa2048e3", RSATestVectors.rsa2048e3PKCS1DER, 2048),
    ]

    @Test func opensslKeysLoad() throws {
        for (name, der, bits) in Self.validKeys {
            let key = try #require(RSAPublicKey(pkcs1DERRepresentation: hex(der)), "\(name)")
            #expect(key.modulusBitCount == bits, "\(name)")
            #expect(key.modulusByteCount == (bits + 7) / 8, "\(name)")
        }
        let e3 = try #require(RSAPublicKey(pkcs1DERRepresentation: hex(RSATestVectors.rsa2048e3PKCS1DER)))
        #expect(e3.publicExponent == [3])
        let e65537 = try #require(RSAPublicKey(pkcs1DERRepresentation: hex(RSATestVectors.rsa2048PKCS1DER)))
        #expect(e65537.publicExponent == [0x01, 0x00, 0x01])
    }

    // MARK: - init(modulus:publicExponent:)

    private static let modulus2048 = RSAPublicKey(pkcs1DERRepresentation: hex(RSATestVectors.rsa2048PKCS1DER))!.modulus

    @Test func leadingZeroBytesAreStripped() throws {
        let key = try #require(RSAPublicKey(modulus: [0, 0, 0] + Self.modulus2048, publicExponent: [0, 0, 1, 0, 1]))
        #expect(key.modulusBitCount == 2048)
        #expect(key.modulus == Self.modulus2048)
        #expect(key.publicExponent == [1, 0, 1])
        let signature = hex(RSATestVectors.rsa2048PKCS1v15SHA256)
        #expect(key.isValidPKCS1v15Signature(signature, digest: SHA256.hash(RSATestVectors.message), hash: .sha256))
    }

    @Test func modulusSizeLimits() {
        func oddModulus(bits: Int) -> [UInt8] {
            let byteCount = (bits + 7) / 8
            var bytes = [UInt8](repeating: 0x5a, count: byteCount)
            bytes[0] = UInt8(1) << UInt8((bits - 1) % 8) | 1  // exactly `bits` bits: top bit set, low filler
            bytes[byteCount - 1] |= 1
            return bytes
        }
        let e: [UInt8] = [1, 0, 1]
        #expect(RSAPublicKey(modulus: oddModulus(bits: 512), publicExponent: e) == nil)
        #expect(RSAPublicKey(modulus: oddModulus(bits: 1023), publicExponent: e) == nil)
        #expect(RSAPublicKey(modulus: oddModulus(bits: 1024), publicExponent: e)?.modulusBitCount == 1024)
        #expect(RSAPublicKey(modulus: oddModulus(bits: 8192), publicExponent: e)?.modulusBitCount == 8192)
        #expect(RSAPublicKey(modulus: oddModulus(bits: 8193), publicExponent: e) == nil)
        #expect(RSAPublicKey(modulus: [], publicExponent: e) == nil)
        #expect(RSAPublicKey(modulus: [0, 0], publicExponent: e) == nil)
        #expect(RSAPublicKey(modulus: [UInt8](repeating: 0, count: 256), publicExponent: e) == nil)
    }

    @Test func evenModulusIsRejected() {
        var even = Self.modulus2048
        even[even.count - 1] ^= 1
        #expect(RSAPublicKey(modulus: even, publicExponent: [1, 0, 1]) == nil)
    }

    @Test func publicExponentLimits() {
        let n = Self.modulus2048
        #expect(RSAPublicKey(modulus: n, publicExponent: [3]) != nil)
        #expect(RSAPublicKey(modulus: n, publicExponent: [0xff, 0xff, 0xff, 0xff]) != nil)
        for bad: [UInt8] in [[], [0], [1], [2], [0, 1], [1, 0, 0], [0xff, 0xfe]] {
            #expect(RSAPublicKey(modulus: n, publicExponent: bad) == nil, "e = \(bad)")
        }
        // Exponents wider than 32 bits are refused (they would make each
        // verification as slow as a private-key operation), even below n.
        #expect(RSAPublicKey(modulus: n, publicExponent: [0x01, 0x00, 0x00, 0x00, 0x01]) == nil)
        #expect(RSAPublicKey(modulus: n, publicExponent: [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]) == nil)
        var nMinusTwo = n
        nMinusTwo[n.count - 1] &-= 2
        #expect(RSAPublicKey(modulus: n, publicExponent: nMinusTwo) == nil)
        #expect(RSAPublicKey(modulus: n, publicExponent: n) == nil)
        var nPlusTwo = n
        nPlusTwo[n.count - 1] &+= 2
        if n[n.count - 1] < 0xfe { #expect(RSAPublicKey(modulus: n, publicExponent: nPlusTwo) == nil) }
        #expect(RSAPublicKey(modulus: n, publicExponent: [1] + n) == nil)
    }

    // MARK: - init(pkcs1DERRepresentation:)

    /// Rewritings of the 2048-bit key's DER, which is
    /// 30 82 01 0a | 02 82 01 01 00 <256 octets of n> | 02 03 01 00 01.
    @Test func malformedDERIsRejected() {
        let der = hex(RSATestVectors.rsa2048PKCS1DER)
        #expect(Array(der.prefix(9)) == hex("3082010a0282010100"))
        #expect(Array(der.suffix(5)) == hex("0203010001"))
        let modulusContents = Array(der[9 ..< 265])
        let nField = hex("0282010100") + modulusContents
        func sequence(_ contents: [UInt8]) -> [UInt8] {
            precondition(contents.count >= 256 && contents.count < 65536)
            return [0x30, 0x82, UInt8(contents.count >> 8), UInt8(contents.count & 0xff)] + contents
        }
        #expect(sequence(nField + hex("0203010001")) == der)

        let cases: [(String, [UInt8])] = [
            ("empty", []),
            ("lone tag", [0x30]),
            ("outer length in three octets", hex("308300010a") + nField + hex("0203010001")),
            ("indefinite outer length", hex("3080") + nField + hex("0203010001") + [0, 0]),
            ("outer length one too long", hex("3082010b") + nField + hex("0203010001")),
            ("outer length one too short", hex("30820109") + nField + hex("0203010001")),
            ("SET instead of SEQUENCE", hex("3182010a") + nField + hex("0203010001")),
            ("exponent length in long form", sequence(nField + hex("028103010001"))),
            ("exponent with a leading zero", sequence(nField + hex("020400010001"))),
            ("modulus with two leading zeros", sequence(hex("028201020000") + modulusContents + hex("0203010001"))),
            ("modulus length in three octets", sequence(hex("028300010100") + modulusContents + hex("0203010001"))),
            ("negative modulus (no leading zero)", sequence(hex("02820100") + modulusContents + hex("0203010001"))),
            ("negative exponent", sequence(nField + hex("0203810001"))),
            ("exponent minus one", sequence(nField + hex("0201ff"))),
            ("empty exponent", sequence(nField + hex("0200"))),
            ("missing exponent", sequence(nField)),
            ("exponent as OCTET STRING", sequence(nField + hex("0403010001"))),
            ("trailing NULL inside the SEQUENCE", sequence(nField + hex("0203010001") + hex("0500"))),
            ("a third INTEGER", sequence(nField + hex("0203010001") + hex("020101"))),
            ("trailing octet after the SEQUENCE", der + [0x00]),
            ("trailing SEQUENCE after the SEQUENCE", der + hex("3000")),
            ("exponent 1", sequence(nField + hex("020101"))),
            ("exponent 65536 (even)", sequence(nField + hex("0203010000"))),
            ("even modulus", sequence(hex("0282010100") + Array(modulusContents.dropLast()) + [modulusContents[255] ^ 1] + hex("0203010001"))),
        ]
        for (reason, bytes) in cases {
            #expect(RSAPublicKey(pkcs1DERRepresentation: bytes) == nil, "\(reason)")
        }
        #expect(RSAPublicKey(pkcs1DERRepresentation: der) != nil)
    }

    /// A 512-bit modulus in well-formed DER (made by hand: n = 2^511 + 2^255 + 1,
    /// with a leading 0x00 because the top bit is set).
    @Test func shortKeyDERIsRejected() {
        var modulus = [UInt8](repeating: 0, count: 64)
        modulus[0] = 0x80
        modulus[32] = 0x01
        modulus[63] = 0x01
        let der = [0x30, 0x48, 0x02, 0x41, 0x00] + modulus + [0x02, 0x03, 0x01, 0x00, 0x01]
        #expect(der.count == 0x48 + 2)
        #expect(RSAPublicKey(pkcs1DERRepresentation: der) == nil)
        // The same bytes shape with a 1024-bit modulus is accepted, so only the size rejected it.
        var modulus1024 = [UInt8](repeating: 0, count: 128)
        modulus1024[0] = 0x80
        modulus1024[127] = 0x01
        let der1024 = [0x30, 0x81, 0x89, 0x02, 0x81, 0x81, 0x00] + modulus1024 + [0x02, 0x03, 0x01, 0x00, 0x01]
        #expect(der1024.count == 0x89 + 3)
        #expect(RSAPublicKey(pkcs1DERRepresentation: der1024)?.modulusBitCount == 1024)
    }

    @Test func everyTruncationIsRejected() {
        for (name, der, _) in Self.validKeys {
            let bytes = hex(der)
            for length in 0 ..< bytes.count {
                #expect(RSAPublicKey(pkcs1DERRepresentation: Array(bytes.prefix(length))) == nil, "\(name) truncated to \(length)")
                // A suffix is malformed too (it no longer starts at the SEQUENCE).
                if length > 0 {
                    #expect(RSAPublicKey(pkcs1DERRepresentation: Array(bytes.suffix(length))) == nil, "\(name) suffix of \(length)")
                }
            }
        }
    }

    /// Every single-octet change of the 1024-bit key's DER is parsed without a
    /// trap; whatever is accepted is still a key within the limits.
    @Test func everySingleByteChangeIsHandled() {
        let der = hex(RSATestVectors.rsa1024PKCS1DER)
        var acceptedCount = 0
        for index in der.indices {
            for change: UInt8 in [0x01, 0x80, 0xff] {
                var changed = der
                changed[index] ^= change
                if let key = RSAPublicKey(pkcs1DERRepresentation: changed) {
                    acceptedCount += 1
                    #expect(RSAPublicKey.modulusBitRange.contains(key.modulusBitCount))
                    #expect(key.modulus.last.map { $0 & 1 == 1 } == true)
                    #expect(key.publicExponent.last.map { $0 & 1 == 1 } == true)
                }
            }
        }
        // Changes inside the modulus that keep it odd and 1024 bits long still give keys.
        #expect(acceptedCount > 0)
    }
}
