import Testing
@testable import X509

@Suite struct ChainVerifierTests {
    let now = ChainFixtures.madeAt + 3600
    let roots: TrustStore

    init() throws {
        roots = try TrustStore(pemBundle: ChainFixtures.root)
    }

    func der(_ pems: String...) throws -> [[UInt8]] {
        try pems.flatMap { try PEM.decodeAll($0, label: "CERTIFICATE") }
    }

    func verify(_ chain: [[UInt8]], host: String = "www.sluice.test", at time: Int64? = nil) throws(ChainVerificationError) -> Certificate {
        try ChainVerifier.verify(chain: chain, host: host, now: time ?? now, trustStore: roots)
    }

    @Test func aLeafThroughItsIntermediateToTheRootVerifies() throws {
        let chain = try der(ChainFixtures.leaf, ChainFixtures.inter)
        #expect(try verify(chain).subject.commonName == "www.sluice.test")
        #expect(try verify(chain, host: "v2.api.sluice.test").subject.commonName == "www.sluice.test")
        #expect(try verify(chain, host: "10.0.0.1").subject.commonName == "www.sluice.test")
        // The root sent along, and unrelated extras, change nothing.
        _ = try verify(try der(ChainFixtures.leaf, ChainFixtures.nc, ChainFixtures.inter, ChainFixtures.root))
    }

    @Test func theWrongNameIsRefusedWithTheNamesTheCertificateHas() throws {
        let chain = try der(ChainFixtures.leaf, ChainFixtures.inter)
        #expect(throws: ChainVerificationError.nameMismatch(host: "sluice.test",
                                                            names: ["www.sluice.test", "*.api.sluice.test", "10.0.0.1"])) {
            try verify(chain, host: "sluice.test")
        }
        #expect(throws: ChainVerificationError.self) { try verify(chain, host: "a.b.api.sluice.test") }
        #expect(throws: ChainVerificationError.self) { try verify(chain, host: "10.0.0.2") }
    }

    @Test func withoutItsIntermediateOrUnderAnotherRootTheChainIsUntrusted() throws {
        #expect(throws: ChainVerificationError.untrusted(issuer: "O=Sluice, CN=Sluice Test Intermediate")) {
            try verify(try der(ChainFixtures.leaf))
        }
        let otherRoots = try TrustStore(pemBundle: ChainFixtures.nc)
        #expect(throws: ChainVerificationError.self) {
            try ChainVerifier.verify(chain: try der(ChainFixtures.leaf, ChainFixtures.inter), host: "www.sluice.test",
                                     now: now, trustStore: otherRoots)
        }
    }

    @Test func validityIsCheckedAtTheGivenTime() throws {
        let chain = try der(ChainFixtures.leaf, ChainFixtures.inter)
        #expect(throws: ChainVerificationError.self) { try verify(chain, at: ChainFixtures.madeAt - 86400) }
        #expect(throws: ChainVerificationError.self) { try verify(chain, at: ChainFixtures.madeAt + 400 * 86400) }
    }

    @Test func aSignatureThatDoesNotVerifyBreaksThePath() throws {
        var chain = try der(ChainFixtures.leaf, ChainFixtures.inter)
        chain[0][chain[0].count - 10] ^= 0x01 // inside the leaf's signature
        #expect(throws: ChainVerificationError.untrusted(issuer: "O=Sluice, CN=Sluice Test Intermediate")) { try verify(chain) }
    }

    @Test func usageAndConstraintsAreEnforcedAsOpenSSLDoes() throws {
        // A leaf for clients only.
        #expect(throws: ChainVerificationError.notPermitted(subject: "CN=www.sluice.test",
                                                            reason: "extendedKeyUsage does not include serverAuth")) {
            try verify(try der(ChainFixtures.clientleaf, ChainFixtures.inter))
        }
        // A certificate that is not a CA cannot issue.
        #expect(throws: ChainVerificationError.notPermitted(subject: "O=Sluice, CN=Not A CA", reason: "not a CA (basicConstraints)")) {
            try verify(try der(ChainFixtures.undernotca, ChainFixtures.notca))
        }
        // pathlen 0 on the intermediate: no CA below it.
        #expect(throws: ChainVerificationError.notPermitted(subject: "O=Sluice, CN=Sluice Test Intermediate",
                                                            reason: "pathLenConstraint 0 exceeded")) {
            try verify(try der(ChainFixtures.deep, ChainFixtures.inter2, ChainFixtures.inter))
        }
        // nameConstraints permitting sluice.test and its subdomains.
        _ = try verify(try der(ChainFixtures.inside, ChainFixtures.nc), host: "shop.sluice.test")
        #expect(throws: ChainVerificationError.notPermitted(subject: "O=Sluice, CN=Sluice Constrained",
                                                            reason: "nameConstraints do not permit www.other.test")) {
            try verify(try der(ChainFixtures.outside, ChainFixtures.nc), host: "www.other.test")
        }
    }

    @Test func rsaPSSSignaturesVerify() throws {
        _ = try verify(try der(ChainFixtures.pss), host: "pss.sluice.test")
    }

    @Test func dnsConstraintsMatchWholeLabels() {
        #expect(ChainVerifier.dnsNameIsWithin("shop.sluice.test", "sluice.test"))
        #expect(ChainVerifier.dnsNameIsWithin("sluice.test", "sluice.test"))
        #expect(!ChainVerifier.dnsNameIsWithin("evilsluice.test", "sluice.test"))
        #expect(ChainVerifier.dnsNameIsWithin("shop.sluice.test", ".sluice.test"))
        #expect(!ChainVerifier.dnsNameIsWithin("sluice.test", ".sluice.test"))
    }

    // Every truncation and damaged byte of a chain's certificates is refused
    // or verifies (a byte in an unsigned field): never a trap.
    @Test func damagedChainsNeverTrap() throws {
        let chain = try der(ChainFixtures.leaf, ChainFixtures.inter)
        for which in 0 ..< 2 {
            for position in stride(from: 0, to: chain[which].count, by: 7) {
                var damaged = chain
                damaged[which][position] ^= 0x5A
                _ = try? verify(damaged)
                damaged = chain
                damaged[which] = Array(chain[which].prefix(position))
                _ = try? verify(damaged)
            }
        }
    }
}
