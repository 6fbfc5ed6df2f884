@testable import X509

/// Bytes from hex text; spaces and colons are ignored (openssl's format).
func hex(_ text: String) -> [UInt8] {
    let digits = Array(text.utf8).filter { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: ":") && $0 != UInt8(ascii: "\n") }
    precondition(digits.count % 2 == 0, "odd hex literal")
    func value(_ byte: UInt8) -> UInt8 {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - 0x30
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - 0x61 + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - 0x41 + 10
        default: preconditionFailure("bad hex digit")
        }
    }
    return stride(from: 0, to: digits.count, by: 2).map { value(digits[$0]) << 4 | value(digits[$0 + 1]) }
}

func toHex(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef")
    return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xF)]] })
}

/// The DER of a test vector's single CERTIFICATE block.
func der(_ pem: String) -> [UInt8] {
    guard let documents = try? PEM.decodeAll(pem), documents.count == 1, documents[0].label == "CERTIFICATE" else {
        preconditionFailure("test vector is not one CERTIFICATE block")
    }
    return documents[0].derBytes
}

func certificate(_ pem: String) throws -> Certificate {
    try Certificate(derRepresentation: der(pem))
}

/// A TLV with the right short or long length form.
func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
    var writer = DERWriter()
    writer.writeElement(tag: DERTag(rawValue: tag), content: content)
    return writer.bytes
}
