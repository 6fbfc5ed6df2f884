import TestSupport
import Testing
@testable import HTTP
import Crypto

// Published test vectors for the primitives that open QUIC Initial packets.
// Where a value is not from a specification the comment says how it was
// computed (Python's hashlib/hmac), so it can be regenerated.

private func hex(_ text: String) -> [UInt8] { QUICFixtures.hex(text) }

@Suite struct SHA256Tests {
    // FIPS 180-2 Appendix B.1 ("abc", one block), B.2 (448 bits, where the
    // padding spills into a second block); the empty message from NIST's
    // SHA-256 example values.
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    ])
    func fipsExamples(message: String, digest: String) {
        #expect(SHA256.hash(Array(message.utf8)) == hex(digest))
    }

    // FIPS 180-2 Appendix B.3: a message far longer than any buffer.
    @Test func oneMillionAs() {
        let message = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(SHA256.hash(message) == hex("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"))
    }

    // Lengths either side of where the 0x80 byte and the 8-byte length stop
    // fitting in the last block (55/56, 119/120) and of whole blocks (63/64/65,
    // 128). Message byte i is i; digests computed with Python's hashlib.
    @Test(arguments: [
        (1, "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"),
        (55, "463eb28e72f82e0a96c0a4cc53690c571281131f672aa229e0d45ae59b598b59"),
        (56, "da2ae4d6b36748f2a318f23e7ab1dfdf45acdc9d049bd80e59de82a60895f562"),
        (57, "2fe741af801cc238602ac0ec6a7b0c3a8a87c7fc7d7f02a3fe03d1c12eac4d8f"),
        (63, "29af2686fd53374a36b0846694cc342177e428d1647515f078784d69cdb9e488"),
        (64, "fdeab9acf3710362bd2658cdc9a29e8f9c757fcf9811603a8c447cd1d9151108"),
        (65, "4bfd2c8b6f1eec7a2afeb48b934ee4b2694182027e6d0fc075074f2fabb31781"),
        (119, "da18797ed7c3a777f0847f429724a2d8cd5138e6ed2895c3fa1a6d39d18f7ec6"),
        (120, "f52b23db1fbb6ded89ef42a23ce0c8922c45f25c50b568a93bf1c075420bbb7c"),
        (121, "335a461692b30bba1d647cc71604e88e676c90e4c22455d0b8c83f4bd7c8ac9b"),
        (128, "471fb943aa23c511f6f72f8d1652d9c880cfa392ad80503120547703e56a2be5"),
    ])
    func paddingBoundaries(length: Int, digest: String) {
        let message = (0 ..< length).map { UInt8(truncatingIfNeeded: $0) }
        #expect(SHA256.hash(message) == hex(digest))
    }

    // RFC 9369 §3.1, §3.3.1 and §3.3.3 define QUIC v2's constants as SHA-256
    // digests of short strings, which makes them vectors too.
    @Test func quicVersion2ConstantsAreDigests() {
        #expect(Array(SHA256.hash(Array("QUICv2 version number".utf8)).prefix(4)) == hex("6b3343cf"))
        #expect(Array(SHA256.hash(Array("QUICv2 salt".utf8)).prefix(20)) == QUICFixtures.version2Salt)
        #expect(SHA256.hash(Array("QUICv2 retry secret".utf8))
            == hex("c4dd2484d681aefa4ff4d69c2c20299984a765a5d3c31982f38fc74162155e9f"))
    }

    @Test func digestIsAlways32Bytes() {
        for length in [0, 1, 64, 1000] {
            #expect(SHA256.hash([UInt8](repeating: 0xA5, count: length)).count == 32)
        }
    }
}

@Suite struct HKDFExpandLabelTests {
    let version1InitialSecret = hex("7db5df06e7a69e432496adedb00851923595221596ae2ae9fb8115c1e9ed0a44")
    let version2InitialSecret = hex("2062e8b3cd8d52092614b8071d0aa1fb7c2e3ac193f78b280e72d8f5751f6aba")

    // RFC 9001 Appendix A.1 and RFC 9369 Appendix A.1 list the HkdfLabel each
    // label encodes to (RFC 8446 §7.1, empty context); expandLabel must be
    // HKDF-Expand with exactly that info.
    @Test(arguments: [
        ("client in", 32, "00200f746c73313320636c69656e7420696e00"),
        ("server in", 32, "00200f746c7331332073657276657220696e00"),
        ("quic key", 16, "00100e746c7331332071756963206b657900"),
        ("quic iv", 12, "000c0d746c733133207175696320697600"),
        ("quic hp", 16, "00100d746c733133207175696320687000"),
        ("quicv2 key", 16, "001010746c73313320717569637632206b657900"),
        ("quicv2 iv", 12, "000c0f746c7331332071756963763220697600"),
        ("quicv2 hp", 16, "00100f746c7331332071756963763220687000"),
    ] as [(String, Int, String)])
    func labelEncodesAsTheRFCsHkdfLabel(label: String, length: Int, info: String) {
        let secret = version1InitialSecret
        #expect(HKDF<SHA256>.expandLabel(secret: secret, label: label, length: length)
            == HKDF<SHA256>.expand(pseudorandomKey: secret, info: hex(info), length: length))
    }

    // RFC 9001 Appendix A.1.
    @Test func version1InitialKeys() {
        let initial = HKDF<SHA256>.extract(salt: QUICFixtures.version1Salt, inputKeyingMaterial: QUICFixtures.exampleDestinationConnectionID)
        #expect(initial == version1InitialSecret)

        let client = HKDF<SHA256>.expandLabel(secret: initial, label: "client in", length: 32)
        #expect(client == hex("c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea"))
        #expect(HKDF<SHA256>.expandLabel(secret: client, label: "quic key", length: 16) == hex("1f369613dd76d5467730efcbe3b1a22d"))
        #expect(HKDF<SHA256>.expandLabel(secret: client, label: "quic iv", length: 12) == hex("fa044b2f42a3fd3b46fb255c"))
        #expect(HKDF<SHA256>.expandLabel(secret: client, label: "quic hp", length: 16) == hex("9f50449e04a0e810283a1e9933adedd2"))

        let server = HKDF<SHA256>.expandLabel(secret: initial, label: "server in", length: 32)
        #expect(server == hex("3c199828fd139efd216c155ad844cc81fb82fa8d7446fa7d78be803acdda951b"))
        #expect(HKDF<SHA256>.expandLabel(secret: server, label: "quic key", length: 16) == hex("cf3a5331653c364c88f0f379b6067e37"))
        #expect(HKDF<SHA256>.expandLabel(secret: server, label: "quic iv", length: 12) == hex("0ac1493ca1905853b0bba03e"))
        #expect(HKDF<SHA256>.expandLabel(secret: server, label: "quic hp", length: 16) == hex("c206b8d9b9f0f37644430b490eeaa314"))
    }

    // RFC 9369 Appendix A.1: a different salt and "quicv2" labels.
    @Test func version2InitialKeys() {
        let initial = HKDF<SHA256>.extract(salt: QUICFixtures.version2Salt, inputKeyingMaterial: QUICFixtures.exampleDestinationConnectionID)
        #expect(initial == version2InitialSecret)

        let client = HKDF<SHA256>.expandLabel(secret: initial, label: "client in", length: 32)
        #expect(client == hex("14ec9d6eb9fd7af83bf5a668bc17a7e283766aade7ecd0891f70f9ff7f4bf47b"))
        #expect(HKDF<SHA256>.expandLabel(secret: client, label: "quicv2 key", length: 16) == hex("8b1a0bc121284290a29e0971b5cd045d"))
        #expect(HKDF<SHA256>.expandLabel(secret: client, label: "quicv2 iv", length: 12) == hex("91f73e2351d8fa91660e909f"))
        #expect(HKDF<SHA256>.expandLabel(secret: client, label: "quicv2 hp", length: 16) == hex("45b95e15235d6f45a6b19cbcb0294ba9"))

        let server = HKDF<SHA256>.expandLabel(secret: initial, label: "server in", length: 32)
        #expect(server == hex("0263db1782731bf4588e7e4d93b7463907cb8cd8200b5da55a8bd488eafc37c1"))
        #expect(HKDF<SHA256>.expandLabel(secret: server, label: "quicv2 key", length: 16) == hex("82db637861d55e1d011f19ea71d5d2a7"))
        #expect(HKDF<SHA256>.expandLabel(secret: server, label: "quicv2 iv", length: 12) == hex("dd13c276499c0249d3310652"))
        #expect(HKDF<SHA256>.expandLabel(secret: server, label: "quicv2 hp", length: 16) == hex("edf6d05c83121201b436e16877593c3a"))
    }

    // RFC 9001 Appendix A.5 and RFC 9369 Appendix A.5: 32-byte outputs, so the
    // length field of the HkdfLabel is exercised beyond the Initial sizes.
    @Test func chaChaShortHeaderKeys() {
        let secret = hex("9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b")
        #expect(HKDF<SHA256>.expandLabel(secret: secret, label: "quic key", length: 32)
            == hex("c6d98ff3441c3fe1b2182094f69caa2ed4b716b65488960a7a984979fb23e1c8"))
        #expect(HKDF<SHA256>.expandLabel(secret: secret, label: "quic iv", length: 12) == hex("e0459b3474bdd0e44a41c144"))
        #expect(HKDF<SHA256>.expandLabel(secret: secret, label: "quic hp", length: 32)
            == hex("25a282b9e82f06f21f488917a4fc8f1b73573685608597d0efcb076b0ab7a7a4"))
        #expect(HKDF<SHA256>.expandLabel(secret: secret, label: "quic ku", length: 32)
            == hex("1223504755036d556342ee9361d253421a826c9ecdf3c7148684b36b714881f9"))

        #expect(HKDF<SHA256>.expandLabel(secret: secret, label: "quicv2 key", length: 32)
            == hex("3bfcddd72bcf02541d7fa0dd1f5f9eeea817e09a6963a0e6c7df0f9a1bab90f2"))
        #expect(HKDF<SHA256>.expandLabel(secret: secret, label: "quicv2 iv", length: 12) == hex("a6b5bc6ab7dafce30ffff5dd"))
        #expect(HKDF<SHA256>.expandLabel(secret: secret, label: "quicv2 hp", length: 32)
            == hex("d659760d2ba434a226fd37b35c69e2da8211d10c4f12538787d65645d5d1b8e2"))
        #expect(HKDF<SHA256>.expandLabel(secret: secret, label: "quicv2 ku", length: 32)
            == hex("c69374c49e3d2a9466fa689e49d476db5d0dfbc87d32ceeaa6343fd0ae4c7d88"))
    }

    // RFC 9369 §3.3.3: the Retry Integrity Tag key and nonce.
    @Test func version2RetryKeyAndNonce() {
        let secret = hex("c4dd2484d681aefa4ff4d69c2c20299984a765a5d3c31982f38fc74162155e9f")
        #expect(HKDF<SHA256>.expandLabel(secret: secret, label: "quicv2 key", length: 16) == hex("8fb4b01b56ac48e260fbcbcead7ccc92"))
        #expect(HKDF<SHA256>.expandLabel(secret: secret, label: "quicv2 iv", length: 12) == hex("d86969bc2d7c6d9990efb04a"))
    }
}
