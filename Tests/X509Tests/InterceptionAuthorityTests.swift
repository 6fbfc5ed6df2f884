import Crypto
import Testing
@testable import X509

@Suite struct InterceptionAuthorityTests {
    let now: Int64 = 1_796_400_000
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15

    func random() -> (Int) -> [UInt8] {
        var state = state
        return { count in
            (0 ..< count).map { _ in
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return UInt8(truncatingIfNeeded: state >> 56)
            }
        }
    }

    @Test func leavesForNamesAndAddressesVerifyUnderTheCA() throws {
        var authority = try InterceptionAuthority.create(commonName: "Sluice Interception CA", now: now, random: random())
        let roots = TrustStore(certificates: [authority.certificate])
        #expect(authority.certificate.subject.commonName == "Sluice Interception CA")
        #expect(authority.certificate.extensions.basicConstraints?.pathLenConstraint == 0)
        for host in ["shop.sluice.test", "API.Sluice.Test.", "10.1.2.3", "[fd00::1]"] {
            let issued = authority.chain(for: host, now: now, random: random())
            let chain = try #require(issued)
            #expect(chain.count == 2)
            #expect(chain[1] == authority.certificate.derRepresentation)
            let leaf = try ChainVerifier.verify(chain: chain, host: host, now: now, trustStore: roots)
            guard case .ecPublicKey(.p256, let point) = leaf.subjectPublicKeyInfo.publicKey else {
                Issue.record("not a P-256 leaf"); continue
            }
            #expect(point == authority.leafKey.publicKey.x962Representation)
            #expect(leaf.notBefore == now - 86400)
            #expect(leaf.notAfter == now + InterceptionAuthority.leafLifetime)
            #expect(leaf.extensions.authorityKeyIdentifier?.keyIdentifier == authority.certificate.extensions.subjectKeyIdentifier)
        }
        // A name no certificate can carry.
        let badName = authority.chain(for: "bad name.test", now: now, random: random())
        let wildcard = authority.chain(for: "*.sluice.test", now: now, random: random())
        #expect(badName == nil)
        #expect(wildcard == nil)
    }

    @Test func aLeafIsIssuedOnceAndAgainNearItsEnd() throws {
        var authority = try InterceptionAuthority.create(commonName: "Sluice Interception CA", now: now, random: random())
        let issued = authority.chain(for: "shop.sluice.test", now: now, random: random())
        let first = try #require(issued)
        // Same name, other spelling, later: the same leaf.
        let again = authority.chain(for: "SHOP.sluice.test", now: now + 86400, random: random())
        #expect(again == first)
        // Less than a day before it ends: a new one.
        let later = now + InterceptionAuthority.leafLifetime - 3600
        let reissued = authority.chain(for: "shop.sluice.test", now: later, random: random())
        let renewed = try #require(reissued)
        #expect(renewed != first)
        _ = try ChainVerifier.verify(chain: renewed, host: "shop.sluice.test", now: later + 7200,
                                     trustStore: TrustStore(certificates: [authority.certificate]))
    }

    @Test func aKeyThatIsNotTheCertificatesOwnIsRefused() throws {
        let authority = try InterceptionAuthority.create(commonName: "Sluice Interception CA", now: now, random: random())
        let stranger = try #require(P256.PrivateKey(randomBytes: [UInt8](repeating: 7, count: 48)))
        #expect(InterceptionAuthority(certificate: authority.certificate, key: stranger, leafKeyRandom: [UInt8](repeating: 9, count: 48)) == nil)
        // Its own key, read back from its file form, is accepted.
        let key = try #require(ECPrivateKeyDER.decode(authority.keyDER))
        #expect(InterceptionAuthority(certificate: authority.certificate, key: key, leafKeyRandom: [UInt8](repeating: 9, count: 48)) != nil)
    }
}
