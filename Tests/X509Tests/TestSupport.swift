@testable import X509
import TestSupport


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
