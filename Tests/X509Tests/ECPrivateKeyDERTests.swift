import TestSupport
import Crypto
import Testing
@testable import X509

@Suite struct ECPrivateKeyDERTests {
    // Made with `openssl ecparam -name prime256v1 -genkey -noout` and
    // `openssl pkcs8 -topk8 -nocrypt`; the point is `openssl ec -pubout`'s.
    static let sec1 = """
-----BEGIN EC PRIVATE KEY-----
MHcCAQEEIB3ssIrAcBJA8tM7eoE1/TpT44Y9EEjk1A3pi5TNz9TOoAoGCCqGSM49
AwEHoUQDQgAE+Z5IieCzlI6jVTEcAWt774vjItCGgT7n7kZsHPDqc04WR7ZQnzB2
WwKE4r7PwCoayyECsedfbkBKn5qeeXn8Lg==
-----END EC PRIVATE KEY-----
"""
    static let pkcs8 = """
-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgHeywisBwEkDy0zt6
gTX9OlPjhj0QSOTUDemLlM3P1M6hRANCAAT5nkiJ4LOUjqNVMRwBa3vvi+Mi0IaB
PufuRmwc8OpzThZHtlCfMHZbAoTivs/AKhrLIQKx519uQEqfmp55efwu
-----END PRIVATE KEY-----
"""
    static let publicPoint = "04f99e4889e0b3948ea355311c016b7bef8be322d086813ee7ee466c1cf0ea734e1647b6509f30765b0284e2becfc02a1acb2102b1e75f6e404a9f9a9e7979fc2e"

    @Test func opensslsKeysReadInBothForms() throws {
        let sec1 = try #require(PEM.decodeAll(Self.sec1, label: "EC PRIVATE KEY").first)
        let pkcs8 = try #require(PEM.decodeAll(Self.pkcs8, label: "PRIVATE KEY").first)
        let fromSEC1 = try #require(ECPrivateKeyDER.decode(sec1))
        let fromPKCS8 = try #require(ECPrivateKeyDER.decode(pkcs8))
        #expect(fromSEC1.publicKey.x962Representation == hex(Self.publicPoint))
        #expect(fromPKCS8.rawScalar == fromSEC1.rawScalar)
    }

    @Test func sluicesEncodingIsWhatOpenSSLWrites() throws {
        let der = try #require(PEM.decodeAll(Self.sec1, label: "EC PRIVATE KEY").first)
        let key = try #require(ECPrivateKeyDER.decode(der))
        #expect(ECPrivateKeyDER.encode(key) == der)
    }

    @Test func damagedOrForeignKeysAreRefused() throws {
        let der = try #require(PEM.decodeAll(Self.sec1, label: "EC PRIVATE KEY").first)
        for length in 0 ..< der.count { #expect(ECPrivateKeyDER.decode(Array(der.prefix(length))) == nil) }
        // A public key that is not the private key's own.
        var mismatched = der
        mismatched[mismatched.count - 1] ^= 1
        #expect(ECPrivateKeyDER.decode(mismatched) == nil)
        for position in der.indices {
            var damaged = der
            damaged[position] ^= 0x81
            _ = ECPrivateKeyDER.decode(damaged)
        }
    }
}
