import Testing
import Crypto

@Suite struct Base64Tests {
    // RFC 4648 §10 test vectors.
    static let vectors: [(String, String)] = [
        ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ]

    @Test(arguments: vectors)
    func rfc4648Vectors(plain: String, encoded: String) {
        #expect(Base64.encode(plain) == encoded)
        #expect(Base64.decode(encoded) == Array(plain.utf8))
        // Unpadded input decodes too.
        #expect(Base64.decode(String(encoded.filter { $0 != "=" })) == Array(plain.utf8))
    }

    @Test func everyByteValueRoundTrips() {
        let all = (0 ... 255).map { UInt8($0) }
        for length in 0 ... all.count {
            let slice = Array(all[0 ..< length])
            #expect(Base64.decode(Base64.encode(slice)) == slice)
            #expect(Base64.decode(Base64.encode(slice, alphabet: .urlSafe, padding: false), alphabet: .urlSafe) == slice)
        }
    }

    @Test func alphabets() {
        let bytes: [UInt8] = [0xFB, 0xFF, 0xBF]
        #expect(Base64.encode(bytes) == "+/+/")
        #expect(Base64.encode(bytes, alphabet: .urlSafe) == "-_-_")
        #expect(Base64.decode("-_-_") == nil)
        #expect(Base64.decode("+/+/", alphabet: .urlSafe) == nil)
    }

    @Test(arguments: ["Zg=", "Z===", "Zm9v=", "Zg==Zg==", "Z", "Zm9vY", "Zm 9v", "Zm9v\n", "é"])
    func malformedInputIsRefused(text: String) {
        #expect(Base64.decode(text) == nil)
    }
}
