import Testing

@testable import X509

/// Every truncation and single-octet change of valid certificates is
/// handled (parsed or thrown), never a trap. Each position gets three
/// different replacement values: the octet with all bits, the low bit, and
/// the high bit flipped (lengths grow and shrink, short lengths turn into
/// long or indefinite forms, tags change class or form).
@Suite struct RobustnessTests {
    static let inputs: [(String, [UInt8])] = [
        ("ecP256CA", der(Vectors.ecP256CA)), ("rsaCA", der(Vectors.rsaCA)), ("p384Leaf", der(Vectors.p384Leaf)),
        ("multiSANLeaf", der(Vectors.multiSANLeaf)), ("nameConstrainedCA", der(Vectors.nameConstrainedCA)),
        ("generalizedTimeCA", der(Vectors.generalizedTimeCA)), ("pssCA", der(Vectors.pssCA)),
        ("ed25519CA", der(Vectors.ed25519CA)), ("builtLeaf", der(BuilderFixtures.leafCertificate)),
    ]

    @Test(arguments: inputs.map(\.0))
    func truncationsAndMutations(name: String) {
        guard let bytes = Self.inputs.first(where: { $0.0 == name })?.1 else { return }
        var accepted = 0
        for end in 0..<bytes.count {
            // A proper prefix is never a complete certificate.
            #expect((try? Certificate(derRepresentation: Array(bytes[..<end]))) == nil)
        }
        var mutated = bytes
        for index in bytes.indices {
            let original = bytes[index]
            for value in [original ^ 0xFF, original ^ 0x01, original ^ 0x80] {
                mutated[index] = value
                if let cert = try? Certificate(derRepresentation: mutated) {
                    accepted += 1
                    // Whatever parsed must be usable without trapping.
                    _ = cert.subject.description
                    _ = cert.issuer.description
                    _ = cert.matches(host: "example.test")
                    _ = cert.extensions.hasUnrecognizedCriticalExtension
                    _ = cert.extensions.nameConstraints
                }
            }
            mutated[index] = original
        }
        // Most changes in key, signature and string bytes keep the DER valid.
        #expect(accepted > 0)
    }

    /// Random-looking inputs (a fixed linear congruential sequence) through
    /// every entry point.
    @Test func arbitraryBytes() {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for length in 0..<400 {
            var bytes: [UInt8] = []
            for _ in 0..<length {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                bytes.append(UInt8(truncatingIfNeeded: state >> 56))
            }
            // A plausible header so parsing gets past the first element.
            let framed = tlv(0x30, tlv(0x30, bytes))
            _ = try? Certificate(derRepresentation: bytes)
            _ = try? Certificate(derRepresentation: framed)
            _ = try? ASN1ObjectIdentifier(derContent: bytes[...]).description
            _ = try? DER.utcTime(bytes[...])
            _ = try? DER.generalizedTime(bytes[...])
            for tag: DERTag in [.utf8String, .bmpString, .universalString, .printableString, .t61String] {
                _ = try? DER.string(tag: tag, content: bytes[...])
            }
            _ = try? PEM.decodeAll(String(decoding: bytes, as: UTF8.self))
            _ = HostNameMatching.reference(String(decoding: bytes, as: UTF8.self))
        }
    }
}
