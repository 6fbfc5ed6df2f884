/// Server identity checks of RFC 9525 §6 (which replaced RFC 6125) against
/// a certificate's subjectAltName.
///
/// Rules, and the choices made where the RFC leaves room:
/// - Only subjectAltName is consulted. The subject commonName is never used
///   (§6.3), so a certificate without subjectAltName matches nothing.
/// - A DNS reference matches dNSName entries only; an IP address reference
///   (a host that parses as an IPv4 or IPv6 literal) matches iPAddress
///   entries only, byte for byte (§6.4.4 and §6.3). IPv4 and IPv4-mapped
///   IPv6 forms are not considered equal.
/// - Comparison is ASCII case-insensitive (§6.4.1). The reference host must
///   be ASCII: internationalized names must arrive as A-labels. One
///   trailing dot is ignored on the reference and on the presented name.
/// - A wildcard is accepted only as the entire leftmost label `*` (§6.4.3)
///   and matches exactly one non-empty label: `*.example.com` matches
///   `www.example.com`, not `example.com` nor `a.b.example.com`.
/// - Without a Public Suffix List, a wildcard must be followed by at least
///   two labels: `*.test` and `*.com` match nothing; `*.co.uk` is still
///   accepted (known limitation).
/// - Names with empty labels, and references containing `*`, match nothing.
/// - A reference whose last label is all digits is taken as an IP literal;
///   if it does not parse as one it matches nothing (as URL parsers treat
///   such hosts as IPv4 addresses).
extension Certificate {
    /// Whether the certificate is valid for `host`, a DNS name or an IP
    /// literal (IPv6 optionally in brackets).
    package func matches(host: String) -> Bool {
        switch HostNameMatching.reference(host) {
        case .ipAddress(let address): matches(ipAddress: address)
        case .dnsName(let name): extensions.dnsNames.contains { HostNameMatching.matches(presented: $0, reference: name) }
        case .invalid: false
        }
    }

    /// Whether an iPAddress entry of subjectAltName equals `ipAddress`
    /// (4 or 16 octets).
    package func matches(ipAddress: [UInt8]) -> Bool {
        extensions.ipAddresses.contains(ipAddress)
    }
}

package enum HostNameMatching {
    enum Reference: Equatable {
        case dnsName([UInt8])
        case ipAddress([UInt8])
        case invalid
    }

    /// Classifies a reference identifier and normalises a DNS name to
    /// lowercase labels without the trailing dot.
    static func reference(_ host: String) -> Reference {
        var text = Array(host.utf8)
        if text.first == UInt8(ascii: "["), text.last == UInt8(ascii: "]") {
            return parseIPv6(Array(text.dropFirst().dropLast())).map { .ipAddress($0) } ?? .invalid
        }
        if text.contains(UInt8(ascii: ":")) {
            return parseIPv6(text).map { .ipAddress($0) } ?? .invalid
        }
        if text.last == UInt8(ascii: ".") { text.removeLast() }
        guard let name = normalizedName(text), !name.contains(UInt8(ascii: "*")) else { return .invalid }
        let lastLabel = name.split(separator: UInt8(ascii: ".")).last ?? []
        if lastLabel.allSatisfy({ (0x30...0x39).contains($0) }) {
            return parseIPv4(name).map { .ipAddress($0) } ?? .invalid
        }
        return .dnsName(name)
    }

    /// Lowercased ASCII with no empty label, or nil.
    private static func normalizedName(_ bytes: [UInt8]) -> [UInt8]? {
        guard !bytes.isEmpty, bytes.allSatisfy({ $0 < 0x80 && $0 > 0x20 }) else { return nil }
        let labels = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard !labels.contains(where: \.isEmpty) else { return nil }
        return bytes.map { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) ? $0 | 0x20 : $0 }
    }

    /// A presented dNSName against a normalised DNS reference.
    static func matches(presented: String, reference: [UInt8]) -> Bool {
        var bytes = Array(presented.utf8)
        if bytes.last == UInt8(ascii: ".") { bytes.removeLast() }
        guard let name = normalizedName(bytes) else { return false }
        let labels = name.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard let first = labels.first, first.elementsEqual([UInt8(ascii: "*")]) else {
            return !name.contains(UInt8(ascii: "*")) && name == reference
        }
        let parent = Array(name.dropFirst(2))  // after "*."
        guard labels.count >= 3, !parent.contains(UInt8(ascii: "*")) else { return false }
        guard let dot = reference.firstIndex(of: UInt8(ascii: ".")), dot > 0 else { return false }
        return Array(reference[(dot + 1)...]) == parent
    }

    /// Dotted-quad IPv4: four decimal parts 0...255 without leading zeros.
    static func parseIPv4(_ text: [UInt8]) -> [UInt8]? {
        let parts = text.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var address: [UInt8] = []
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
            guard part.count == 1 || part.first != UInt8(ascii: "0") else { return nil }
            let value = part.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            guard value <= 255 else { return nil }
            address.append(UInt8(value))
        }
        return address
    }

    /// IPv6 text forms of RFC 4291 §2.2: eight groups of 1–4 hex digits, one
    /// `::` standing for one or more zero groups, an optional trailing
    /// dotted-quad IPv4 for the last 32 bits. Zone identifiers are refused.
    static func parseIPv6(_ text: [UInt8]) -> [UInt8]? {
        func groups(_ part: ArraySlice<UInt8>, allowIPv4Tail: Bool) -> [UInt16]? {
            if part.isEmpty { return [] }
            let pieces = part.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false)
            var result: [UInt16] = []
            for (index, piece) in pieces.enumerated() {
                if allowIPv4Tail, index == pieces.count - 1, piece.contains(UInt8(ascii: ".")) {
                    guard let v4 = parseIPv4(Array(piece)) else { return nil }
                    result.append(UInt16(v4[0]) << 8 | UInt16(v4[1]))
                    result.append(UInt16(v4[2]) << 8 | UInt16(v4[3]))
                    continue
                }
                guard (1...4).contains(piece.count) else { return nil }
                var value: UInt16 = 0
                for byte in piece {
                    guard let digit = hexValue(byte) else { return nil }
                    value = value << 4 | UInt16(digit)
                }
                result.append(value)
            }
            return result
        }
        var groupsBefore: [UInt16]
        var groupsAfter: [UInt16] = []
        var compressed = false
        if let range = firstRange(of: [UInt8(ascii: ":"), UInt8(ascii: ":")], in: text) {
            compressed = true
            let after = text[range.upperBound...]
            guard firstRange(of: [UInt8(ascii: ":"), UInt8(ascii: ":")], in: Array(after)) == nil else { return nil }
            guard let before = groups(text[..<range.lowerBound], allowIPv4Tail: false),
                let afterGroups = groups(after, allowIPv4Tail: true)
            else { return nil }
            groupsBefore = before
            groupsAfter = afterGroups
            guard groupsBefore.count + groupsAfter.count <= 7 else { return nil }
        } else {
            guard let all = groups(text[...], allowIPv4Tail: true), all.count == 8 else { return nil }
            groupsBefore = all
        }
        let zeros = compressed ? 8 - groupsBefore.count - groupsAfter.count : 0
        let all = groupsBefore + [UInt16](repeating: 0, count: zeros) + groupsAfter
        return all.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func firstRange(of needle: [UInt8], in haystack: [UInt8]) -> Range<Int>? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start..<start + needle.count].elementsEqual(needle) {
            return start..<start + needle.count
        }
        return nil
    }
}
