/// An OBJECT IDENTIFIER (X.690 §8.19), kept as its DER contents octets: that
/// encoding is canonical, so equality and hashing on it are equality of
/// identifiers, and arcs of any size (e.g. 2.25.<UUID>) are representable.
/// Named `ASN1ObjectIdentifier` because the standard library owns
/// `ObjectIdentifier`.
package struct ASN1ObjectIdentifier: Hashable, Sendable, CustomStringConvertible {
    /// The contents octets: base-128 subidentifiers, the first combining the
    /// first two arcs as 40 × first + second.
    package let derContent: [UInt8]

    /// Validates contents octets: at least one subidentifier, each in the
    /// fewest octets (no leading 0x80, §8.19.2), the last one complete.
    package init(derContent: ArraySlice<UInt8>) throws(DERError) {
        guard let last = derContent.last else { throw .invalidContent("empty OBJECT IDENTIFIER") }
        guard last & 0x80 == 0 else { throw .invalidContent("OBJECT IDENTIFIER ends inside a subidentifier") }
        var startsSubidentifier = true
        for byte in derContent {
            if startsSubidentifier, byte == 0x80 {
                throw .invalidContent("OBJECT IDENTIFIER subidentifier not minimal")
            }
            startsSubidentifier = byte & 0x80 == 0
        }
        self.derContent = Array(derContent)
    }

    /// From arcs: at least two, the first 0, 1 or 2, the second below 40
    /// unless the first is 2 (X.660 §A.2). Nil otherwise.
    package init?(arcs: [UInt64]) {
        guard arcs.count >= 2, arcs[0] <= 2 else { return nil }
        guard arcs[0] == 2 || arcs[1] < 40 else { return nil }
        let (first, overflow) = arcs[1].addingReportingOverflow(arcs[0] * 40)
        guard !overflow else { return nil }
        var content: [UInt8] = []
        for arc in [first] + arcs.dropFirst(2) {
            var groups: [UInt8] = [UInt8(arc & 0x7F)]
            var rest = arc >> 7
            while rest != 0 {
                groups.append(UInt8(rest & 0x7F) | 0x80)
                rest >>= 7
            }
            content.append(contentsOf: groups.reversed())
        }
        derContent = content
    }

    /// From dotted decimal such as "1.2.840.10045.2.1"; each arc must fit in
    /// 64 bits. Nil for anything else.
    package init?(dotted: String) {
        var arcs: [UInt64] = []
        for part in dotted.split(separator: ".", omittingEmptySubsequences: false) {
            guard !part.isEmpty, part.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                part == "0" || part.first != "0",
                let arc = UInt64(part)
            else { return nil }
            arcs.append(arc)
        }
        self.init(arcs: arcs)
    }

    /// The dotted decimal form, computed in decimal digit arithmetic so arcs
    /// wider than 64 bits (UUID arcs are 128) print correctly. That costs
    /// time quadratic in an arc's length, so an arc encoded in more than
    /// 32 octets (224 bits; none is registered) prints as `#` and the hex of
    /// its octets instead, keeping hostile input cheap to print.
    package var description: String {
        var parts: [String] = []
        var digits: [UInt8] = [0]  // little-endian decimal digits of the subidentifier being read
        var isFirst = true
        var arcStart = 0
        for (offset, byte) in derContent.enumerated() {
            if offset - arcStart >= 32 {
                guard byte & 0x80 == 0 else { continue }
                let hexDigits = Array("0123456789abcdef")
                parts.append("#" + String(derContent[arcStart...offset].flatMap { [hexDigits[Int($0 >> 4)], hexDigits[Int($0 & 0xF)]] }))
                isFirst = false
                digits = [0]
                arcStart = offset + 1
                continue
            }
            multiplyAdd(&digits, multiplier: 128, addend: Int(byte & 0x7F))
            guard byte & 0x80 == 0 else { continue }
            if isFirst {
                isFirst = false
                // 0.x and 1.x have x < 40, so the combined value is below 80.
                let small = digits.count <= 2 ? Int(digits[0]) + 10 * Int(digits.count > 1 ? digits[1] : 0) : 80
                if small < 40 {
                    parts.append("0")
                    parts.append(String(small))
                } else if small < 80 {
                    parts.append("1")
                    parts.append(String(small - 40))
                } else {
                    parts.append("2")
                    subtractEighty(&digits)
                    parts.append(decimalString(digits))
                }
            } else {
                parts.append(decimalString(digits))
            }
            digits = [0]
            arcStart = offset + 1
        }
        return parts.joined(separator: ".")
    }

    private func multiplyAdd(_ digits: inout [UInt8], multiplier: Int, addend: Int) {
        var carry = addend
        for index in digits.indices {
            let value = Int(digits[index]) * multiplier + carry
            digits[index] = UInt8(value % 10)
            carry = value / 10
        }
        while carry > 0 {
            digits.append(UInt8(carry % 10))
            carry /= 10
        }
    }

    /// Only called with a value of at least 80.
    private func subtractEighty(_ digits: inout [UInt8]) {
        var borrow = 80
        for index in digits.indices where borrow > 0 {
            var value = Int(digits[index]) - borrow % 10
            borrow /= 10
            if value < 0 {
                value += 10
                borrow += 1
            }
            digits[index] = UInt8(value)
        }
        while digits.count > 1, digits.last == 0 { digits.removeLast() }
    }

    private func decimalString(_ digits: [UInt8]) -> String {
        var trimmed = digits
        while trimmed.count > 1, trimmed.last == 0 { trimmed.removeLast() }
        return String(decoding: trimmed.reversed().map { $0 + 0x30 }, as: UTF8.self)
    }
}

/// The identifiers this package recognises, spelled as in their RFCs.
extension ASN1ObjectIdentifier {
    private static func known(_ arcs: [UInt64]) -> ASN1ObjectIdentifier {
        // Constant arcs that satisfy `init(arcs:)`; the fallback is unreachable.
        ASN1ObjectIdentifier(arcs: arcs) ?? ASN1ObjectIdentifier(unchecked: [])
    }

    private init(unchecked content: [UInt8]) { derContent = content }

    // Signature algorithms: RFC 5758 §3.2, RFC 4055 §5, RFC 8410 §3.
    package static let ecdsaWithSHA256 = known([1, 2, 840, 10045, 4, 3, 2])
    package static let ecdsaWithSHA384 = known([1, 2, 840, 10045, 4, 3, 3])
    package static let ecdsaWithSHA512 = known([1, 2, 840, 10045, 4, 3, 4])
    package static let sha256WithRSAEncryption = known([1, 2, 840, 113549, 1, 1, 11])
    package static let sha384WithRSAEncryption = known([1, 2, 840, 113549, 1, 1, 12])
    package static let sha512WithRSAEncryption = known([1, 2, 840, 113549, 1, 1, 13])
    package static let rsassaPSS = known([1, 2, 840, 113549, 1, 1, 10])
    package static let mgf1 = known([1, 2, 840, 113549, 1, 1, 8])
    package static let ed25519 = known([1, 3, 101, 112])

    // Hash functions: RFC 3279 §2.1, RFC 4055 §2.1.
    package static let sha1 = known([1, 3, 14, 3, 2, 26])
    package static let sha256 = known([2, 16, 840, 1, 101, 3, 4, 2, 1])
    package static let sha384 = known([2, 16, 840, 1, 101, 3, 4, 2, 2])
    package static let sha512 = known([2, 16, 840, 1, 101, 3, 4, 2, 3])

    // Public keys: RFC 5480 §2.1.1, RFC 3279 §2.3.1.
    package static let ecPublicKey = known([1, 2, 840, 10045, 2, 1])
    package static let prime256v1 = known([1, 2, 840, 10045, 3, 1, 7])
    package static let secp384r1 = known([1, 3, 132, 0, 34])
    package static let secp521r1 = known([1, 3, 132, 0, 35])
    package static let rsaEncryption = known([1, 2, 840, 113549, 1, 1, 1])

    // Name attributes: X.520, RFC 5280 Appendix A.1.
    package static let commonName = known([2, 5, 4, 3])
    package static let surname = known([2, 5, 4, 4])
    package static let serialNumber = known([2, 5, 4, 5])
    package static let countryName = known([2, 5, 4, 6])
    package static let localityName = known([2, 5, 4, 7])
    package static let stateOrProvinceName = known([2, 5, 4, 8])
    package static let streetAddress = known([2, 5, 4, 9])
    package static let organizationName = known([2, 5, 4, 10])
    package static let organizationalUnitName = known([2, 5, 4, 11])
    package static let domainComponent = known([0, 9, 2342, 19_200_300, 100, 1, 25])
    package static let userID = known([0, 9, 2342, 19_200_300, 100, 1, 1])

    // Certificate extensions: RFC 5280 §4.2.1.
    package static let subjectKeyIdentifier = known([2, 5, 29, 14])
    package static let keyUsage = known([2, 5, 29, 15])
    package static let subjectAltName = known([2, 5, 29, 17])
    package static let basicConstraints = known([2, 5, 29, 19])
    package static let nameConstraints = known([2, 5, 29, 30])
    package static let authorityKeyIdentifier = known([2, 5, 29, 35])
    package static let extKeyUsage = known([2, 5, 29, 37])

    // Extended key usages: RFC 5280 §4.2.1.12.
    package static let anyExtendedKeyUsage = known([2, 5, 29, 37, 0])
    package static let serverAuth = known([1, 3, 6, 1, 5, 5, 7, 3, 1])
    package static let clientAuth = known([1, 3, 6, 1, 5, 5, 7, 3, 2])
}
