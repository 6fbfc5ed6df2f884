import TestSupport
import Crypto
import Testing

/// Ecdsa-Sig-Value DER (RFC 3279 §2.2.3) encoding and strict parsing.
@Suite struct SignatureDERTests {
    static let valid = hex(OpenSSLVectorTests.p256Vectors[0].der)

    @Test func encodingIsMinimal() {
        #expect(ECDSASignature(r: [0x01], s: [0x7F]).derRepresentation == hex("3006020101 02017F"))
        #expect(ECDSASignature(r: [0x80], s: [0x00, 0x00, 0xFF]).derRepresentation == hex("3008 02020080 020200FF"))
        #expect(ECDSASignature(r: [], s: [0]).derRepresentation == hex("3006 020100 020100"))
        // A long-form sequence length once the body reaches 128 bytes.
        let wide = [UInt8](repeating: 0x81, count: 66)
        let encoded = ECDSASignature(r: wide, s: wide).derRepresentation
        #expect(Array(encoded.prefix(5)) == [0x30, 0x81, 0x8A, 0x02, 0x43])
        #expect(ECDSASignature(derRepresentation: encoded) == ECDSASignature(r: wide, s: wide))
    }

    @Test func parsingNormalises() throws {
        let signature = try #require(ECDSASignature(derRepresentation: Self.valid))
        #expect(signature.r.count == 32 && signature.s.count == 32)
        #expect(signature.r.first == 0x8D)
        #expect(signature.derRepresentation == Self.valid)
        #expect(ECDSASignature(derRepresentation: hex("3006 020100 020100")) == ECDSASignature(r: [], s: []))
    }

    @Test func malformedEncodingsAreRejected() {
        let malformed: [String] = [
            "",
            "30",
            "3000",  // empty sequence
            "3003 020101",  // one integer
            "3009 020101 020101 020101",  // three integers
            "3106 020101 020101",  // SET, not SEQUENCE
            "3006 020101 030101",  // BIT STRING for s
            "3007 02020001 020101",  // non-minimal: 0x00 before a byte below 0x80
            "3007 020101 0202007F",
            "3008 0203000080 020101",  // two leading zeros
            "3006 020180 020101",  // negative r
            "3006 020101 0201FF",  // negative s
            "3005 0200 020101",  // empty INTEGER
            "3006 020101 020101 00",  // trailing byte after the sequence
            "3007 020101 020101 00",  // trailing byte inside the sequence
            "3005 020101 020101",  // sequence length too short
            "3008 020101 020101",  // sequence length too long
            "3006 020201 020101",  // integer length past its element
            "308106 020101 020101",  // long form for a short length
            "30820006 020101 020101",  // two length bytes for a short length
            "3080 020101 020101 0000",  // indefinite length
            "3007 02810101 020101",  // long-form integer length
            "3006 02 81 01 020101",
            "3085FFFFFFFFFF",  // huge length
            "30840000000602010102 0101",
        ]
        for text in malformed {
            #expect(ECDSASignature(derRepresentation: hex(text)) == nil, "\(text)")
        }
    }

    @Test func everyTruncationIsRejected() {
        for length in 0 ..< Self.valid.count {
            #expect(ECDSASignature(derRepresentation: Array(Self.valid.prefix(length))) == nil)
        }
        let p384 = hex(OpenSSLVectorTests.p384Vectors[2].der)
        for length in 0 ..< p384.count {
            #expect(ECDSASignature(derRepresentation: Array(p384.prefix(length))) == nil)
        }
    }

    /// Every single-byte change parses to nil or to a signature whose
    /// encoding is exactly the changed bytes (strict DER is canonical), and
    /// verification of whatever parses returns without a trap.
    @Test func everySingleByteChangeIsHandled() throws {
        let key = try #require(P256.PublicKey(x962Representation: OpenSSLVectorTests.p256Key))
        let digest = hex(OpenSSLVectorTests.p256Vectors[0].digest)
        for index in Self.valid.indices {
            for value in [0x00, 0x01, 0x02, 0x30, 0x7F, 0x80, 0x81, 0xFF] as [UInt8] where value != Self.valid[index] {
                var altered = Self.valid
                altered[index] = value
                if let signature = ECDSASignature(derRepresentation: altered) {
                    #expect(signature.derRepresentation == altered)
                    #expect(!key.isValidSignature(signature, forDigest: digest))
                }
            }
        }
    }
}
