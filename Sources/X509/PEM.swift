import Crypto

/// Why PEM text was refused.
package enum PEMError: Error, Equatable, Sendable {
    /// A `-----BEGIN label-----` line without its `-----END label-----`
    /// (the text ended, or another BEGIN came first).
    case missingEnd(label: String)
    /// The END line names a different label than the BEGIN line.
    case mismatchedLabel(begin: String, end: String)
    /// The lines between the boundaries are not base64 (RFC 4648 §4).
    case invalidBase64(label: String)
    /// A boundary line whose label breaks RFC 7468 §3's `label` rule.
    case invalidLabel(String)
}

/// One encapsulated block: its label (`CERTIFICATE`, `PRIVATE KEY`...) and
/// the decoded bytes.
package struct PEMDocument: Equatable, Sendable {
    package let label: String
    package let derBytes: [UInt8]

    package init(label: String, derBytes: [UInt8]) {
        self.label = label
        self.derBytes = derBytes
    }
}

/// Textual encodings of RFC 7468. Decoding follows its lax parser (§2,
/// figure 2 of §3): text outside the boundaries is explanatory and ignored
/// (CA bundles put comments there), trailing whitespace on boundary lines
/// and whitespace inside the base64 are allowed, CRLF or LF line ends.
/// RFC 1421 headers (`Proc-Type:`) are not supported and fail as base64.
package enum PEM {
    private static let beginPrefix = "-----BEGIN "
    private static let endPrefix = "-----END "
    private static let boundarySuffix = "-----"

    /// Every block in `text`, in order. Text without blocks gives [].
    package static func decodeAll(_ text: String) throws(PEMError) -> [PEMDocument] {
        var documents: [PEMDocument] = []
        var openLabel: String?
        var base64 = ""
        // Split on LF scalars: as Characters, CR LF is a single grapheme.
        for rawLine in Array(text.utf8).split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            let line = trimmingTrailingWhitespace(String(decoding: rawLine, as: UTF8.self))
            if let label = openLabel {
                if line.hasPrefix(endPrefix) {
                    let endLabel = try boundaryLabel(line, prefix: endPrefix)
                    guard endLabel == label else { throw .mismatchedLabel(begin: label, end: endLabel) }
                    guard let bytes = Base64.decode(base64) else { throw .invalidBase64(label: label) }
                    documents.append(PEMDocument(label: label, derBytes: bytes))
                    openLabel = nil
                    base64 = ""
                } else if line.hasPrefix(beginPrefix) {
                    throw .missingEnd(label: label)
                } else {
                    base64.unicodeScalars.append(contentsOf: line.unicodeScalars.filter { !isWhitespace($0) })
                }
            } else if line.hasPrefix(beginPrefix) {
                openLabel = try boundaryLabel(line, prefix: beginPrefix)
            }
        }
        if let label = openLabel { throw .missingEnd(label: label) }
        return documents
    }

    /// The blocks labelled `label` (for example `CERTIFICATE` in a bundle).
    package static func decodeAll(_ text: String, label: String) throws(PEMError) -> [[UInt8]] {
        try decodeAll(text).filter { $0.label == label }.map(\.derBytes)
    }

    /// One block with 64-character lines and LF line ends (RFC 7468 §2).
    package static func encode(label: String, derBytes: [UInt8]) -> String {
        let body = Array(Base64.encode(derBytes).unicodeScalars)
        var text = beginPrefix + label + boundarySuffix + "\n"
        var index = 0
        while index < body.count {
            let end = min(index + 64, body.count)
            var line = String.UnicodeScalarView()
            line.append(contentsOf: body[index..<end])
            text += String(line) + "\n"
            index = end
        }
        return text + endPrefix + label + boundarySuffix + "\n"
    }

    /// The label of a boundary line, checked against RFC 7468 §3:
    /// `label = [ labelchar *( ["-" / SP] labelchar ) ]`, labelchar being
    /// printable ASCII except `-`.
    private static func boundaryLabel(_ line: String, prefix: String) throws(PEMError) -> String {
        guard line.hasSuffix(boundarySuffix), line.count >= prefix.count + boundarySuffix.count else {
            throw .invalidLabel(String(line))
        }
        let label = String(line.dropFirst(prefix.count).dropLast(boundarySuffix.count))
        let bytes = Array(label.utf8)
        for (index, byte) in bytes.enumerated() {
            let isLabelCharacter = (0x21...0x7E).contains(byte) && byte != UInt8(ascii: "-")
            let isSeparator = byte == UInt8(ascii: "-") || byte == UInt8(ascii: " ")
            let separatorAllowed =
                index > 0 && index < bytes.count - 1 && bytes[index - 1] != UInt8(ascii: "-")
                && bytes[index - 1] != UInt8(ascii: " ")
            guard isLabelCharacter || (isSeparator && separatorAllowed) else { throw .invalidLabel(label) }
        }
        return label
    }

    private static func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        scalar == " " || scalar == "\t" || scalar == "\r" || scalar == "\u{0B}" || scalar == "\u{0C}"
    }

    private static func trimmingTrailingWhitespace(_ line: String) -> String {
        var scalars = Array(line.unicodeScalars)
        while let last = scalars.last, isWhitespace(last) { scalars.removeLast() }
        var result = String.UnicodeScalarView()
        result.append(contentsOf: scalars)
        return String(result)
    }
}
