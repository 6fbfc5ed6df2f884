import Testing

@testable import X509

@Suite struct PEMTests {
    /// Laid out like /etc/ssl/certs/ca-certificates.crt: comments between
    /// blocks, CRLF on one block, trailing spaces on a boundary line.
    @Test func bundleWithComments() throws {
        let crlfBlock = Vectors.rsaCA.split(separator: "\n", omittingEmptySubsequences: false).joined(separator: "\r\n")
        let bundle = """
            # Sluice test bundle
            # Issuer: CN=Sluice Test EC CA
            \(Vectors.ecP256CA)

            Some explanatory text with ----- dashes -----
            \(crlfBlock)\r
            \(Vectors.p384Leaf.replacingFirstLine(with: "-----BEGIN CERTIFICATE-----   "))
            -----BEGIN PRIVATE KEY-----
            AAEC
            -----END PRIVATE KEY-----
            trailing comment
            """
        let documents = try PEM.decodeAll(bundle)
        #expect(documents.map(\.label) == ["CERTIFICATE", "CERTIFICATE", "CERTIFICATE", "PRIVATE KEY"])
        #expect(documents[0].derBytes == der(Vectors.ecP256CA))
        #expect(documents[1].derBytes == der(Vectors.rsaCA))
        #expect(documents[2].derBytes == der(Vectors.p384Leaf))
        #expect(documents[3].derBytes == [0, 1, 2])
        let certificates = try PEM.decodeAll(bundle, label: "CERTIFICATE")
        #expect(certificates.count == 3)
        for bytes in certificates { #expect(throws: Never.self) { try Certificate(derRepresentation: bytes) } }
        #expect(try PEM.decodeAll("no blocks here\n").isEmpty)
        #expect(try PEM.decodeAll("").isEmpty)
    }

    @Test func encodeRoundTrip() throws {
        let bytes = der(Vectors.rsaCA)
        let text = PEM.encode(label: "CERTIFICATE", derBytes: bytes)
        // openssl writes the same 64-column layout.
        #expect(text == Vectors.rsaCA + "\n")
        #expect(try PEM.decodeAll(text) == [PEMDocument(label: "CERTIFICATE", derBytes: bytes)])
        #expect(PEM.encode(label: "X", derBytes: []) == "-----BEGIN X-----\n-----END X-----\n")
        #expect(PEM.encode(label: "EC PARAMETERS", derBytes: [6, 8]) == "-----BEGIN EC PARAMETERS-----\nBgg=\n-----END EC PARAMETERS-----\n")
    }

    @Test func malformedBlocks() {
        #expect(throws: PEMError.invalidBase64(label: "CERTIFICATE")) {
            try PEM.decodeAll("-----BEGIN CERTIFICATE-----\nAB*D\n-----END CERTIFICATE-----\n")
        }
        #expect(throws: PEMError.invalidBase64(label: "CERTIFICATE")) {
            try PEM.decodeAll("-----BEGIN CERTIFICATE-----\nA\n-----END CERTIFICATE-----\n")
        }
        #expect(throws: PEMError.invalidBase64(label: "CERTIFICATE")) {
            try PEM.decodeAll("-----BEGIN CERTIFICATE-----\nAA==AA==\n-----END CERTIFICATE-----\n")
        }
        #expect(throws: PEMError.invalidBase64(label: "X")) {
            try PEM.decodeAll("-----BEGIN X-----\nProc-Type: 4,ENCRYPTED\n\nAAAA\n-----END X-----\n")
        }
        #expect(throws: PEMError.mismatchedLabel(begin: "CERTIFICATE", end: "PRIVATE KEY")) {
            try PEM.decodeAll("-----BEGIN CERTIFICATE-----\nAAAA\n-----END PRIVATE KEY-----\n")
        }
        #expect(throws: PEMError.missingEnd(label: "CERTIFICATE")) {
            try PEM.decodeAll("-----BEGIN CERTIFICATE-----\nAAAA\n")
        }
        #expect(throws: PEMError.missingEnd(label: "A")) {
            try PEM.decodeAll("-----BEGIN A-----\nAAAA\n-----BEGIN B-----\nAAAA\n-----END B-----\n")
        }
        for label in ["-A", "A-", "A--B", "A  B", "A\u{7F}", "Ä"] {
            #expect(throws: PEMError.invalidLabel(label)) {
                try PEM.decodeAll("-----BEGIN \(label)-----\nAAAA\n-----END \(label)-----\n")
            }
        }
        #expect(throws: PEMError.self) { try PEM.decodeAll("-----BEGIN CERTIFICATE----\nAAAA\n") }
    }

    /// Truncating a bundle anywhere never traps.
    @Test func everyTruncation() {
        let text = Array(("# c\n" + Vectors.ecP256CA + "\n").utf8)
        for end in 0...text.count {
            _ = try? PEM.decodeAll(String(decoding: text[..<end], as: UTF8.self))
        }
    }
}

extension String {
    fileprivate func replacingFirstLine(with line: String) -> String {
        guard let newline = firstIndex(of: "\n") else { return line }
        return line + self[newline...]
    }
}
